package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rcamesh/rcamesh/internal/history/pgtest"
)

// TestWebUIHistory drives the war room's history views in headless
// Chromium against the binary with the PostgreSQL store (the KV store when
// PostgreSQL is not installed): three alerts are investigated, the history
// list shows them newest first, a text search narrows it to one, and that
// investigation opens with its diagnosis, critic verdicts, pins and report.
// The list's screenshot is saved as history-list.png in $RCAMESH_ARTIFACTS
// (docs/war-room-history.png in the README is a copy of it).
func TestWebUIHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, drives a browser and runs PostgreSQL")
	}
	browser := findChromium(t)
	shots := artifactsDir(t)
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	args := []string{"-target=all", "-data.dir=" + t.TempDir(), "-http.addr=" + httpAddr, "-grpc.addr=" + grpcAddr,
		"-tools.scenario=" + demoScenario}
	store := "kv"
	if _, err := pgtest.BinDir(); err == nil || os.Getenv("CI") != "" {
		pg := pgtest.Start(t)
		args = append(args, "-store=postgres", "-store.dsn="+pg.DSN())
		store = "postgres"
	}
	startBinary(t, httpAddr, args...)
	base := "http://" + httpAddr

	// Three incidents: the demo alert and two variants of it.
	raw, err := os.ReadFile(filepath.Join(demoScenario, "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	variants := []struct{ alertname, service, namespace string }{
		{"", "", ""},
		{"HighLatencyP99", "checkout", "retail"},
		{"PodCrashLooping", "payments-api", "billing"},
	}
	for _, v := range variants {
		body := string(raw)
		if v.alertname != "" {
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			relabel := func(m any) {
				if l, ok := m.(map[string]any); ok {
					l["alertname"], l["service"], l["namespace"] = v.alertname, v.service, v.namespace
				}
			}
			if ann, ok := doc["commonAnnotations"].(map[string]any); ok {
				ann["summary"] = v.alertname + " on " + v.service
			}
			for _, a := range doc["alerts"].([]any) {
				if ann, ok := a.(map[string]any)["annotations"].(map[string]any); ok {
					ann["summary"] = v.alertname + " on " + v.service
				}
			}
			relabel(doc["commonLabels"])
			relabel(doc["groupLabels"])
			for _, a := range doc["alerts"].([]any) {
				relabel(a.(map[string]any)["labels"])
			}
			b, _ := json.Marshal(doc)
			body = string(b)
		}
		code, resp := postJSON(t, base+"/api/v4/alerts", body)
		sid, _ := resp["session_id"].(string)
		if code != 200 || sid == "" {
			t.Fatalf("post alert %v: %d %v", v, code, resp)
		}
		waitSessionDone(t, base, sid)
	}

	// A session is done before its record reaches the history store (the
	// store write follows the delivery): the list page reads the store
	// once when it opens, so wait until the store holds all three.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var page struct {
			Investigations []json.RawMessage `json:"investigations"`
		}
		getJSON(t, base+"/api/v4/history/investigations?page_size=25", &page)
		if len(page.Investigations) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history store holds %d investigations after 60s, want 3", len(page.Investigations))
		}
		time.Sleep(100 * time.Millisecond)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	u := &ui{t: t, ctx: bctx, dir: shots}
	u.do("open the war room", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("main")))
	u.eval(`window.__errors = []; addEventListener("error", e => __errors.push(String(e.message)));
		addEventListener("unhandledrejection", e => __errors.push(String(e.reason)))`)
	u.do("open the history", chromedp.Click(chromedp.CSS(`[data-testid="nav-history"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="history-search"]`)))
	u.poll("three past investigations", `document.querySelectorAll("[data-testid=history-row]").length === 3`)
	if got := evalT[string](u, `document.querySelector(".pager").innerText`); !strings.Contains(got, "store: "+store) {
		t.Errorf("pager says %q, want the %s store", got, store)
	}
	titles := evalT[[]string](u, `[...document.querySelectorAll("[data-testid=history-link]")].map(a => a.innerText)`)
	if len(titles) != 3 {
		t.Fatalf("titles %v", titles)
	}
	u.overflow("history list")
	u.shot("history-list")
	if err := copyFile(filepath.Join(shots, fmt.Sprintf("%02d-history-list.png", u.n)), filepath.Join(shots, "history-list.png")); err != nil {
		t.Error(err)
	}

	// Full-text search narrows the list to the crash-looping payments incident.
	u.setInput(`[data-testid="history-query"]`, "payments-api")
	u.do("search", chromedp.Click(chromedp.CSS(`[data-testid="history-search"] button[type=submit]`)))
	u.poll("one result", `document.querySelectorAll("[data-testid=history-row]").length === 1 &&
		document.querySelector("[data-testid=history-row]").innerText.includes("billing/payments-api")`)
	u.shot("history-search")
	u.setInput(`[data-testid="history-query"]`, "no-such-thing-anywhere")
	u.do("search nothing", chromedp.Click(chromedp.CSS(`[data-testid="history-search"] button[type=submit]`)))
	u.poll("empty result", `!!document.querySelector("[data-testid=history-empty]")`)

	// Open one past investigation.
	u.setInput(`[data-testid="history-query"]`, "")
	u.do("clear search", chromedp.Click(chromedp.CSS(`[data-testid="history-search"] button[type=submit]`)))
	u.poll("all rows back", `document.querySelectorAll("[data-testid=history-row]").length === 3`)
	u.do("open an investigation", chromedp.Click(chromedp.CSS(`[data-testid="history-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="history-investigation"]`)))
	u.poll("report and verdicts", `!!document.querySelector("[data-testid=history-report]") &&
		document.querySelector("[data-testid=history-report]").innerText.length > 100 &&
		document.querySelectorAll("[data-testid=history-verdicts] tbody tr").length > 0 &&
		document.querySelector("[data-testid=history-root-cause]").innerText.length > 10`)
	u.overflow("past investigation")
	u.shot("history-investigation")
	if errs := evalT[[]string](u, `window.__errors || []`); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
