package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/intent"
)

// An exception is read by the shape every runtime gives it (a stack frame,
// an exception class as thrown), not only by the classes exceptionRe
// spells; a class whose words another row reads is that row's.
func TestRuntimeException(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"java.time.DateTimeException: Invalid date 'February 29' as '2031' is not a leap year\n\tat java.time.LocalDate.create(LocalDate.java:459)\n\tat org.acme.Renewal.next(Renewal.java:41)", true},
		{"failed to load: System.OverflowException: Value was either too large or too small for an Int32.\n   at System.Int32.Parse(String s)\n   at Acme.Rules.Manifest.Version(String raw) in Manifest.cs:line 27", true},
		{"Traceback:\n  File \"/srv/app/pricing.py\", line 88, in quote\n    total = base / units\nZeroDivision happened", true},
		{"goroutine 41 [running]:\nmain.(*Ledger).Post(0x0)\n\t/src/ledger/post.go:120 +0x1d", true},
		{"    at computeTotals (/app/dist/cart.js:212:17)\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)", true},
		{"app/models/order.rb:12:in `total': undefined method", true},
		{"DateTimeParseException: Text '2026-W53' could not be parsed at index 5", true},
		// exceptionRe's own spellings still count.
		{"panic: runtime error: index out of range [3] with length 3", true},
		// A class whose message names a connection's failure, no trace.
		{"CommunicationsException: Communications link failure The last packet successfully received from the server was 612,044 milliseconds ago.", false},
		// A pool that ran dry, thrown with its stack: the pool's row.
		{"HikariPool-1 - Connection is not available, request timed out after 30000ms.\n\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)", false},
		// A refused connection with its stack is the dependency's.
		{"org.postgresql.util.PSQLException: Connection to db:5432 refused.\n\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:319)", false},
		{"request failed with status 500", false},
	}
	for _, tc := range tests {
		if got := runtimeException(tc.msg); got != tc.want {
			t.Errorf("runtimeException(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

func TestFrameFiles(t *testing.T) {
	texts := []string{
		"x\n\tat a.b.Renewal.next(Renewal.java:41)\n\tat a.b.Gate.eval(Gate.kt:8)\n\tat a.b.Renewal.next(Renewal.java:44)",
		"at Acme.Manifest.Version(String raw) in src/Manifest.cs:line 27",
		`File "/srv/app/pricing.py", line 88, in quote`,
		"\t/src/ledger/post.go:120 +0x1d",
		`"caller":"retry/loop.go:33"`,
	}
	want := []string{"Renewal.java", "Gate.kt", "Manifest.cs", "pricing.py", "post.go", "loop.go"}
	if got := frameFiles(texts, 10); !slices.Equal(got, want) {
		t.Fatalf("frameFiles = %v, want %v", got, want)
	}
	if got := frameFiles(texts, 2); len(got) != 2 {
		t.Fatalf("frameFiles max 2 = %v", got)
	}
}

// A latent defect: exceptions with no release before them whose stack runs
// through a file one of the service's commits changed, months before. The
// commit is the culprit and the category code, even when the exception's
// words read as bad input; without such a commit the same exceptions stay
// the service's, and the finding asks for the files' history.
func TestLatentDefectNamedByFrames(t *testing.T) {
	for _, v := range []struct{ svc, file, frame, msg string }{
		{"badge-expiry", "src/main/java/org/guild/badges/ExpiryPolicy.java", "\tat org.guild.badges.ExpiryPolicy.next(ExpiryPolicy.java:52)", "java.time.DateTimeException: Invalid date 'February 29' as '2033' is not a leap year\n\tat java.time.LocalDate.create(LocalDate.java:459)\n"},
		{"tariff-loader", "Tariffs/Manifest.cs", "   at Grid.Tariffs.Manifest.Version(String raw) in Manifest.cs:line 27", "failed to load tariffs: System.OverflowException: Value was either too large or too small for an Int32.\n   at System.Int32.Parse(String s)\n"},
	} {
		t.Run(v.svc, func(t *testing.T) {
			var lines []facts.LogLine
			for i := 0; i < 4; i++ {
				lines = append(lines, errLine(2+i*2, v.svc+"-6b7c8d9f4-q2w3e", v.svc, v.msg+v.frame))
			}
			old := at(-200 * 24 * 60)
			commits := []facts.Commit{
				{SHA: "7e11a90c3b", Service: v.svc, Message: "compute renewal without the old library", Files: []facts.CommitFile{{Path: v.file}}, Timestamp: old},
				{SHA: "5a5a5a5a5a", Service: v.svc, Message: "bump logging", Files: []facts.CommitFile{{Path: "build.gradle"}}, Timestamp: at(-100 * 24 * 60)},
				{SHA: "9999aaaa00", Service: "other-svc", Message: "same file name elsewhere", Files: []facts.CommitFile{{Path: v.file}}, Timestamp: at(-50 * 24 * 60)},
			}
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines), pin(t, "com", "get_commits", "commits", facts.KeyCommits, commits))
			f := res.Findings[0]
			if f.Mode != ModeCodeException || f.Category != catCode || f.Entity != "commit/7e11a90" {
				t.Fatalf("lead %s %s %s, want the code exception blaming commit 7e11a90", f.Mode, f.Category, f.Entity)
			}
			res, _ = analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, lines))
			f = res.Findings[0]
			if f.Mode != ModeCodeException || f.Entity != "deployment/shop/"+v.svc {
				t.Fatalf("without the commit: lead %s %s, want the service's exception", f.Mode, f.Entity)
			}
			fu, _ := res.LeadFollowUps()
			if len(fu) != 1 || fu[0].Intent != intent.GetCommits || fu[0].Params["service"] != v.svc {
				t.Fatalf("follow-ups %v, want the service's commits of the framed files", fu)
			}
			if p, _ := fu[0].Params["path"].(string); !slices.Contains(strings.Split(p, ","), "LocalDate.java") && !slices.Contains(strings.Split(p, ","), "Manifest.cs") {
				t.Fatalf("path %q names no framed file", p)
			}
		})
	}
}

// One exception with a stack trace starts the incident when it precedes
// every other service's error and its callers' errors name the service;
// without the callers naming it, or when another error came first, one
// line is not enough.
func TestSingleFramedExceptionFirstAndNamed(t *testing.T) {
	exc := "cannot activate catalogue: System.OverflowException: Value was either too large or too small for an Int32.\n   at System.Int32.Parse(String s)\n   at Shelf.Catalogue.Load(String raw) in Catalogue.cs:line 14"
	caller := func(min int, msg string) facts.LogLine {
		return errLine(min, "storefront-5d6f7-aa1", "storefront", msg)
	}
	cases := []struct {
		name   string
		lines  []facts.LogLine
		leadOK bool
	}{
		{"first and named", []facts.LogLine{errLine(1, "shelf-sync-7c8d9-zz9", "shelf-sync", exc), caller(3, "order rejected: CATALOGUE_UNAVAILABLE (shelf-sync 503)"), caller(6, "order rejected: CATALOGUE_UNAVAILABLE (shelf-sync 503)"), caller(9, "order rejected: CATALOGUE_UNAVAILABLE (shelf-sync 503)")}, true},
		{"callers do not name it", []facts.LogLine{errLine(1, "shelf-sync-7c8d9-zz9", "shelf-sync", exc), caller(3, "order rejected: upstream 503"), caller(6, "order rejected: upstream 503"), caller(9, "order rejected: upstream 503")}, false},
		{"another error first", []facts.LogLine{caller(0, "order rejected: shelf-sync timeout"), errLine(1, "shelf-sync-7c8d9-zz9", "shelf-sync", exc), caller(3, "order rejected: CATALOGUE_UNAVAILABLE (shelf-sync 503)")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := analyze(t, nil, pin(t, "logs", "search_logs", "logs", facts.KeyLogLines, tc.lines))
			got := slices.ContainsFunc(res.Findings, func(f Finding) bool {
				return f.Mode == ModeCodeException && f.Entity == "deployment/shop/shelf-sync"
			})
			if got != tc.leadOK {
				t.Fatalf("code exception of shelf-sync found = %v, want %v", got, tc.leadOK)
			}
		})
	}
}

func TestWeekYearShift(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"departure date 2027-12-28 outside horizon; requested departure 2026-12-28", true},
		{"period 2025-12-29..2025-12-31 written as 2026-12-29", true},
		{"renewal 2026-06-30 for plan started 2025-06-30", false}, // not the turn of the year
		{"report for 2026-12-29 and 2026-12-30", false},           // same year
		{"window 2025-12-20 to 2026-12-20", false},                // before the last week
	}
	for _, tc := range tests {
		if got := weekYearShift(tc.text); got != tc.want {
			t.Errorf("weekYearShift(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
