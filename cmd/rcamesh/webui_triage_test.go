package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebUITriage opens a SAST triage session in the war room before its
// findings are posted, then posts the bundled example to POST
// /api/v4/findings: the findings arrive live as pins and the page shows each
// verdict with its claims, the raw code they cite and the unknowns left.
func TestWebUITriage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives a browser")
	}
	browser := findChromium(t)
	shots := artifactsDir(t)
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	startBinary(t, httpAddr, "-target=all", "-data.dir="+t.TempDir(), "-http.addr="+httpAddr, "-grpc.addr="+grpcAddr,
		"-triage.code-root="+examples)
	base := "http://" + httpAddr

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1280, 900))
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
	const sid = "triage-ui-1"
	u.do("open the triage session", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/#/s/"+sid),
		chromedp.WaitVisible(chromedp.CSS("main")))
	u.eval(`window.__errors = []; addEventListener("error", e => __errors.push(String(e.message)));
		addEventListener("unhandledrejection", e => __errors.push(String(e.reason)))`)
	u.poll("the empty session", `document.querySelector('[data-testid="no-evidence"]') !== null`)

	doc, err := os.ReadFile("../../examples/sast-demo/findings.sarif")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"repo": "sast-demo", "session_id": sid, "sarif": json.RawMessage(doc)})
	code, resp := postJSON(t, base+"/api/v4/findings", string(body))
	if code != 200 {
		t.Fatalf("findings: %d %v", code, resp)
	}
	results, _ := resp["results"].([]any)

	// every finding arrives on the live stream, without a reload
	u.poll("every finding", `document.querySelectorAll('[data-testid="finding"]').length === `+itoa(len(results)))
	u.poll("the live stream", `document.querySelector('[data-testid="conn"]')?.textContent === "live"`)
	// a true positive shows its claims and the raw code they cite: the
	// request getter of the source claim
	u.poll("a verdict with cited code", `[...document.querySelectorAll('[data-testid="finding"][data-verdict="TRUE_POSITIVE"]')].some(f =>
		[...f.querySelectorAll('[data-testid="claim"][data-claim="source"] [data-testid="cited-code"] pre')].some(p => p.textContent.includes("request.getParameter(")))`)
	// the cited code on the page is the file's raw line
	first, _ := results[0].(map[string]any)
	ev, _ := first["evidence"].([]any)
	if len(ev) == 0 {
		t.Fatalf("first result has no evidence: %v", first)
	}
	c0, _ := ev[0].(map[string]any)
	raw, err := os.ReadFile(filepath.Join(examples, "sast-demo", c0["file"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	snippet, _ := c0["snippet"].(string)
	if !containsLine(string(raw), snippet) {
		t.Fatalf("cited snippet %q is not a line of %s", snippet, c0["file"])
	}
	onPage := evalT[bool](u, `[...document.querySelectorAll('[data-testid="cited-code"] pre')].some(p => p.textContent === `+jsString(snippet)+`)`)
	if !onPage {
		t.Errorf("the cited code %q is not shown", snippet)
	}
	// NEEDS_REVIEW findings show what is still unknown
	u.poll("unknowns of a NEEDS_REVIEW finding", `[...document.querySelectorAll('[data-testid="finding"][data-verdict="NEEDS_REVIEW"] [data-testid="unknowns"] li')].length > 0`)
	// the tally counts the verdicts the API returned
	tally := evalT[string](u, `document.querySelector('[data-testid="tally"]').innerText`)
	for _, want := range []string{"TRUE_POSITIVE " + itoa(int(resp["true_positives"].(float64))), "FALSE_POSITIVE " + itoa(int(resp["false_positives"].(float64)))} {
		if !containsFold(tally, want) {
			t.Errorf("tally %q lacks %q", tally, want)
		}
	}
	// filtering by verdict
	u.do("filter false positives", chromedp.Click(chromedp.CSS(`[data-testid="filter-FALSE_POSITIVE"]`)))
	u.poll("only false positives", `[...document.querySelectorAll('[data-testid="finding"]')].every(f => f.dataset.verdict === "FALSE_POSITIVE")`)
	u.shot("triage-session")
	if errs := evalT[[]string](u, `window.__errors`); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(strings.Join(strings.Fields(s), " ")), strings.ToLower(sub))
}
