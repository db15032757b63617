package analysis

import (
	"testing"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// An input that changed shape before failures is the root cause, a data
// fault, named by its feed, file or host: columns that came in another
// order, a count loaded as nothing, a value that jumped from the one before
// it. Not a change after the failures began, not one no failure follows,
// not a small move, not the same columns again.
func TestDetectInputChange(t *testing.T) {
	base := time.Date(2026, 6, 14, 9, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := base.Add(time.Duration(m) * time.Minute); return &x }
	line := func(svc, level string, m int, msg string) LogLine {
		return LogLine{LogLine: facts.LogLine{Timestamp: at(m), Service: svc, Namespace: "ops", Level: level, Message: msg}}
	}
	skipped := func(m int) LogLine {
		return line("dispatcher", "WARN", m, "pickup P-1 skipped: latitude 151.2 out of range [-90,90]")
	}
	tests := []struct {
		name string
		logs []LogLine
		want string
	}{
		{"columns reordered, named by the file", []LogLine{
			line("loader", "INFO", 0, "donors-0613.csv fetched from feeds.partner.example header: donor_id,name,lat,lon rows=412"),
			line("loader", "INFO", 10, "donors-0614.csv fetched from feeds.partner.example header: donor_id,name,lon,lat rows=418"),
			skipped(12), skipped(15),
		}, "file/donors-0614.csv"},
		{"a count loaded as nothing, named by a nearby line's feed", []LogLine{
			line("refresher", "INFO", 0, "downloaded feed postal-ref for the nightly swap"),
			line("refresher", "INFO", 3, "swap complete: postcode_ref rows=0 (previous 1742118)"),
			line("quoting", "ERROR", 40, "quote refused: postcode SW1A 1AA unknown"),
		}, "feed/postal-ref"},
		{"a value that jumped, from a host", []LogLine{
			line("fx-import", "INFO", 0, "upserted 412 rates from https://rates.example.net/daily; EURINR=0.010870 (prev 92.31)"),
			line("quotes", "ERROR", 30, "quote rejected: EURINR mid 0.010870 deviates 99% from the 30d average"),
		}, "host/rates.example.net"},
		{"the same columns again", []LogLine{
			line("loader", "INFO", 0, "donors-0613.csv fetched header: donor_id,name,lat,lon"),
			line("loader", "INFO", 10, "donors-0614.csv fetched header: donor_id,name,lat,lon"),
			skipped(12),
		}, ""},
		{"the failures began first", []LogLine{
			skipped(-5),
			line("loader", "INFO", 0, "donors-0613.csv fetched header: donor_id,name,lat,lon"),
			line("loader", "INFO", 10, "donors-0614.csv fetched header: donor_id,name,lon,lat"),
		}, ""},
		{"no line fails, the alert fired after the change", []LogLine{
			line("refresher", "INFO", 3, "swap complete: postcode_ref rows=0 (previous 1742118) from postal.example.org"),
		}, "host/postal.example.org"},
		{"no line fails, the alert fired before the change", []LogLine{
			line("refresher", "INFO", 63, "swap complete: postcode_ref rows=0 (previous 1742118) from postal.example.org"),
		}, ""},
		{"a count beside yesterday's, in a warning", []LogLine{
			line("stock-import", "INFO", 0, "downloaded sftp://edi.parts.example/out/stock_full.csv"),
			line("stock-import", "WARN", 1, "parsed 8,100 rows (yesterday 71,902); file ends mid-row"),
		}, "file/stock_full.csv"},
		{"a range beside the previous feed's", []LogLine{
			line("lots-import", "INFO", 0, "fetching https://feeds.consign.example/lots.json"),
			line("lots-import", "INFO", 4, "imported 880 lots; reserve range 1,200..640,000 (previous feed: 12..6,400); 0 rejected"),
		}, "file/lots.json"},
		{"a field the reader dropped", []LogLine{
			line("rates-import", "INFO", 0, "fetched rates-0801.json from https://rates.example.net/v2 (schema 2.3)"),
			line("rates-import", "WARN", 0, "unknown field unit_scale in entries KRW, HUF (ignored)"),
			line("pricing", "WARN", 5, "checkout blocked: price deviation 9900% > 30%"),
		}, "file/rates-0801.json"},
		{"most values changed at once", []LogLine{
			line("price-load", "INFO", 0, "feed vendor-prices: 900 rows, delimiter ';'"),
			line("price-load", "WARN", 2, "812 of 900 prices changed by more than 50% (applying)"),
		}, "feed/vendor-prices"},
		{"a few values changed", []LogLine{
			line("price-load", "INFO", 0, "feed vendor-prices: 900 rows"),
			line("price-load", "INFO", 2, "40 of 900 prices changed by more than 50%"),
		}, ""},
		{"a count that halved", []LogLine{
			line("lots-import", "INFO", 4, "imported 440 lots (yesterday 880) from feeds.consign.example"),
		}, ""},
		{"a small move", []LogLine{
			line("refresher", "INFO", 3, "swap complete: postcode_ref rows=1742120 (previous 1742118) from postal.example.org"),
			skipped(12),
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := NewEvidence(&investigationv1.Alert{AlertName: "x", StartsAt: timestamppb.New(*at(60))}, nil)
			ev.Logs = tc.logs
			fs := detectInputChange(ev)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %q (%s), want none", fs[0].Entity, fs[0].Statement)
				}
				return
			}
			if len(fs) != 1 || fs[0].Entity != tc.want || fs[0].Category != catData {
				t.Fatalf("findings %+v, want one data fault on %s", fs, tc.want)
			}
		})
	}
}
