package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestWebUI drives the war room in a real headless Chromium against the
// binary on the demo scenario: the session list, live pins and the critic's
// verdicts, the Pod Logs form, the slash-command palette, suggestion chips,
// bad input, a server restart under a live stream, keyboard-only use and the
// layout at two widths. Screenshots of every step go to $RCAMESH_ARTIFACTS.
func TestWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives a browser")
	}
	browser := findChromium(t)
	shots := artifactsDir(t)

	dataDir := t.TempDir()
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	args := []string{"-target=all", "-data.dir=" + dataDir, "-http.addr=" + httpAddr, "-grpc.addr=" + grpcAddr,
		"-tools.scenario=" + demoScenario}
	srv := startBinary(t, httpAddr, args...)
	base := "http://" + httpAddr

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil { // starts the browser with no deadline
		t.Fatalf("start %s: %v", browser, err)
	}
	u := &ui{t: t, ctx: bctx, dir: shots}
	start := time.Now()

	// 0. The sessions list before any alert: an empty state, not a blank page.
	u.do("open the sessions list", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("main")))
	u.eval(`window.__errors = []; addEventListener("error", e => __errors.push(String(e.message)));
		addEventListener("unhandledrejection", e => __errors.push(String(e.reason)))`)
	u.poll("empty state", `document.querySelector("main").innerText.includes("No alerts received yet")`)
	u.shot("empty-list")

	// 1. An alert opens a session; its automated pins arrive and the critic
	// turns each one green (with a causal role) or informational.
	alert, err := os.ReadFile(filepath.Join(demoScenario, "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var alertDoc struct {
		CommonLabels map[string]string `json:"commonLabels"`
	}
	if err := json.Unmarshal(alert, &alertDoc); err != nil {
		t.Fatal(err)
	}
	namespace := alertDoc.CommonLabels["namespace"]
	code, resp := postJSON(t, base+"/api/v4/alerts", string(alert))
	sid, _ := resp["session_id"].(string)
	if code != 200 || sid == "" {
		t.Fatalf("post alert: %d %v", code, resp)
	}
	link := fmt.Sprintf(`a[data-testid="session-link"][href="#/s/%s"]`, sid)
	u.do("session in the list", chromedp.WaitVisible(chromedp.CSS(link)))
	u.shot("session-list")
	u.eval(pinRecorder)
	u.do("open the session", chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="evidence-grid"]`)))
	u.shot("session-arriving")
	waitSessionDone(t, base, sid)
	want := len(restPins(t, base, sid))
	u.poll("automated pins settle", fmt.Sprintf(`document.querySelectorAll(".card[data-pin]").length === %d &&
		!document.querySelector(".card[data-state=pending]") && document.querySelector("[data-testid=conn].live")`, want))
	if n := evalT[int](u, `document.querySelectorAll(".card[data-state=validated] [data-testid=role]").length`); n == 0 {
		t.Error("no validated pin shows a causal-role badge")
	}
	if bad := evalT[int](u, `[...document.querySelectorAll(".card[data-state=validated]")].filter(c => !c.querySelector("[data-testid=role]") || c.closest("details.informational")).length +
		[...document.querySelectorAll(".card[data-state=rejected]")].filter(c => !c.closest("details.informational")).length`); bad != 0 {
		t.Errorf("%d cards in the wrong place: validated ones need a role badge in the grid, rejected ones belong to the informational section", bad)
	}
	u.shot("session-pins")

	// 2. The Pod Logs quick action: an inline form filled from the context,
	// offering the session's pods; the new card goes amber, then final.
	tools := restTools(t, base, sid)
	logs := tools["fetch_pod_logs"]
	if logs.Label == "" {
		t.Fatalf("fetch_pod_logs missing from /tools: %v", tools)
	}
	if got := evalT[string](u, fmt.Sprintf(`([...document.querySelectorAll(".toolbar button")].find(b => b.textContent.trim() === %q) || {dataset: {}}).dataset.intent || ""`, logs.Label)); got != "fetch_pod_logs" {
		t.Fatalf("no enabled toolbar button labelled %q (found intent %q)", logs.Label, got)
	}
	for intent, tool := range tools {
		disabled := evalT[string](u, fmt.Sprintf(`(b => b ? (b.disabled ? "disabled:" + b.title : "enabled") : "missing")(document.querySelector('.toolbar button[data-intent=%q]'))`, intent))
		switch {
		case disabled == "missing":
		case tool.Available && disabled != "enabled":
			t.Errorf("toolbar %s: %s, but the API says it is available", intent, disabled)
		case !tool.Available && (!strings.HasPrefix(disabled, "disabled:") || len(disabled) < len("disabled:")+5):
			t.Errorf("toolbar %s: %q, want dimmed with the reason as tooltip (%s)", intent, disabled, tool.UnavailableReason)
		}
	}
	form := `form[data-testid="param-form"][data-intent="fetch_pod_logs"]`
	u.do("open the Pod Logs form", chromedp.Click(chromedp.CSS(`.toolbar button[data-intent="fetch_pod_logs"]`)), chromedp.WaitVisible(chromedp.CSS(form)))
	if v := u.value("#f-fetch_pod_logs-namespace"); v != namespace {
		t.Errorf("namespace field = %q, want %q from the context", v, namespace)
	}
	pods := evalT[[]string](u, `[...document.querySelectorAll("#f-fetch_pod_logs-pod-opts option")].map(o => o.value)`)
	if len(pods) == 0 || !slices.Contains(pods, logs.options("pod")[0]) {
		t.Fatalf("pod field offers %v, want the session's pods %v", pods, logs.options("pod"))
	}
	u.poll("focus on the first empty required field", `document.activeElement.id === "f-fetch_pod_logs-pod"`)
	u.shot("pod-logs-form")
	known := u.pinIDs()
	u.do("run Pod Logs", chromedp.SendKeys(chromedp.ID("f-fetch_pod_logs-pod"), pods[0]),
		chromedp.Click(chromedp.CSS(form+` button[data-testid="run"]`)), chromedp.WaitNotPresent(chromedp.CSS(form)))
	logsPin := u.newPin("fetch_pod_logs", known, "pod-logs-pending", "pod-logs-final")
	if claim := evalT[string](u, fmt.Sprintf(`document.querySelector('[data-pin=%q] .claim').textContent`, logsPin)); !strings.Contains(claim, strings.TrimSuffix(pods[0], "*")) {
		t.Errorf("pod logs card claim %q does not name pod %s", claim, pods[0])
	}

	// 3. The palette: "/" lists the commands, ArrowDown/Enter picks one, the
	// template shows as ghost text, Tab accepts each parameter, Enter runs.
	chat := chromedp.CSS(`[data-testid="chat-input"]`)
	u.do("open the palette", chromedp.Click(chat), chromedp.SendKeys(chat, "/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="palette"]`)))
	if n := evalT[int](u, `document.querySelectorAll("[data-testid=palette] [role=option]").length`); n < 5 {
		t.Errorf("palette lists %d commands", n)
	}
	u.shot("palette")
	for i := 0; ; i++ {
		u.do("arrow down", chromedp.KeyEvent(kb.ArrowDown))
		if evalT[string](u, `document.querySelector("[data-testid=palette] [aria-selected=true]").dataset.intent`) == "fetch_pod_logs" {
			break
		}
		if i > 30 {
			t.Fatal("ArrowDown never selected /logs in the palette")
		}
	}
	u.do("pick with Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="ghost"]`)))
	if v := u.value(`[data-testid="chat-input"]`); v != logs.SlashCommand+" " {
		t.Errorf("after Enter the input holds %q, want %q", v, logs.SlashCommand+" ")
	}
	ghost := evalT[string](u, `document.querySelector("[data-testid=ghost]").textContent`)
	if !strings.Contains(ghost, "namespace="+namespace) || !strings.Contains(ghost, "pod=") {
		t.Errorf("ghost template %q lacks namespace=%s and pod=", ghost, namespace)
	}
	u.shot("ghost-template")
	u.do("Tab through the parameters", chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Tab))
	cmd := u.value(`[data-testid="chat-input"]`)
	if !strings.HasPrefix(cmd, logs.SlashCommand+" namespace="+namespace+" pod=") || strings.HasSuffix(cmd, "pod=") {
		t.Errorf("after two Tabs the input holds %q", cmd)
	}
	if evalT[bool](u, `!!document.querySelector("[data-testid=ghost]")`) {
		t.Error("ghost text still shown with every parameter filled")
	}
	if evalT[string](u, `document.activeElement.dataset.testid || ""`) != "chat-input" {
		t.Error("Tab moved the focus out of the chat input")
	}
	u.shot("template-filled")
	known = u.pinIDs()
	u.do("submit the command", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-answer"]`)))
	u.newPin("fetch_pod_logs", known, "", "command-pin")

	// 4. A suggestion chip fires its quick action at once.
	u.do("chips", chromedp.WaitVisible(chromedp.CSS(`[data-testid="chip"]`)))
	chipIntent := evalT[string](u, `document.querySelector("[data-testid=chip]").dataset.intent`)
	known = u.pinIDs()
	u.do("click a chip", chromedp.Click(chromedp.CSS(`[data-testid="chip"]`)))
	u.newPin(chipIntent, known, "", "chip-pin")

	// 5. Bad input: the server's error next to the input, the page keeps working.
	u.setInput(`[data-testid="chat-input"]`, "/nope x=1")
	u.do("unknown command", chromedp.Focus(chat), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-error"]`)))
	if msg := evalT[string](u, `document.querySelector("[data-testid=chat-error]").textContent`); !strings.Contains(msg, "unknown command") || !strings.Contains(msg, "/nope") {
		t.Errorf("unknown command shows %q", msg)
	}
	if gap := evalT[float64](u, `document.querySelector("[data-testid=chat-error]").getBoundingClientRect().top - document.querySelector("[data-testid=chat-input]").getBoundingClientRect().bottom`); gap < 0 || gap > 60 {
		t.Errorf("chat error is %.0f px from the input", gap)
	}
	u.shot("unknown-command")
	known = u.pinIDs()
	u.setInput(`[data-testid="chat-input"]`, "which deploy broke checkout?")
	u.do("plain-language question", chromedp.Focus(chat), chromedp.KeyEvent(kb.Enter))
	u.poll("an answer to the question", `(document.querySelector("[data-testid=chat-answer]") || {}).textContent?.length > 10 || !!document.querySelector("[data-testid=chat-error]")`)
	t.Logf("plain-language answer: %q", evalT[string](u, `(document.querySelector("[data-testid=chat-answer]") || document.querySelector("[data-testid=chat-error]")).textContent.slice(0, 200)`))
	if evalT[bool](u, `!!document.querySelector("[data-testid=chat-answer]") && document.querySelector("[data-testid=chat-input]").value === ""`) {
		u.newPin("", known, "", "") // the smart path ran a tool: its card lands like any other
	}
	u.shot("plain-language")
	u.setInput(`[data-testid="chat-input"]`, "/describe kind=pod")
	u.do("missing parameter in chat", chromedp.Focus(chat), chromedp.KeyEvent(kb.Enter))
	u.poll("missing-parameter error", `(document.querySelector("[data-testid=chat-error]") || {}).textContent?.includes("name")`)
	u.do("open the form again", chromedp.Click(chromedp.CSS(`.toolbar button[data-intent="fetch_pod_logs"]`)), chromedp.WaitVisible(chromedp.CSS(form)))
	u.do("submit without pod", chromedp.Focus(chromedp.ID("f-fetch_pod_logs-pod")), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="form-error"]`)))
	if msg := evalT[string](u, `document.querySelector("[data-testid=form-error]").textContent`); !strings.Contains(msg, "pod") {
		t.Errorf("missing pod shows %q", msg)
	}
	if evalT[string](u, `document.getElementById("f-fetch_pod_logs-pod").getAttribute("aria-invalid")`) != "true" {
		t.Error("the empty pod field is not marked invalid after the server's error")
	}
	if evalT[bool](u, `!document.querySelector(`+fmt.Sprintf("%q", form)+`)`) {
		t.Error("the form closed on a server error; the user loses what they typed")
	}
	u.shot("missing-parameter")
	u.do("Escape closes the form", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(form)))

	// 6. The stream survives a server restart without duplicate cards.
	before := u.pinIDs()
	_ = srv.cmd.Process.Signal(os.Interrupt)
	stopped := make(chan error, 1)
	go func() { stopped <- srv.cmd.Wait() }()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop on SIGINT:\n%s", srv.log())
	}
	u.poll("connection shows down", `!!document.querySelector("[data-testid=conn].down")`)
	u.shot("disconnected")
	startBinary(t, httpAddr, args...)
	u.poll("connection back", `!!document.querySelector("[data-testid=conn].live")`)
	u.setInput(`[data-testid="chat-input"]`, "/status namespace="+namespace)
	u.do("command after restart", chromedp.Focus(chat), chromedp.KeyEvent(kb.Enter))
	u.newPin("check_pod_status", before, "", "")
	ids := evalT[[]string](u, `[...document.querySelectorAll("[data-pin]")].map(e => e.dataset.pin)`)
	if dup := duplicates(ids); len(dup) > 0 {
		t.Errorf("duplicate cards after reconnect: %v", dup)
	}
	if rest := len(restPins(t, base, sid)); len(ids) != rest || len(ids) != len(before)+1 {
		t.Errorf("after restart the page shows %d cards, the API has %d pins, %d were shown before plus 1 new", len(ids), rest, len(before))
	}
	u.shot("after-restart")

	// 7. Keyboard only: a toolbar button opens its form, typing and Tab/Enter
	// run it; Escape closes the palette.
	known = u.pinIDs()
	u.eval(`document.querySelector('.toolbar button[data-intent="fetch_pod_logs"]').focus()`)
	u.do("Enter on the toolbar button", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(form)))
	u.poll("focus on the empty pod field", `document.activeElement.id === "f-fetch_pod_logs-pod"`)
	u.do("type the pod, Tab to Run, Enter", chromedp.KeyEvent(pods[len(pods)-1]), chromedp.KeyEvent(kb.Tab))
	if got := evalT[string](u, `document.activeElement.dataset.testid || ""`); got != "run" {
		t.Errorf("Tab from the pod field lands on %q, want the Run button", got)
	}
	u.do("run by keyboard", chromedp.KeyEvent(kb.Enter), chromedp.WaitNotPresent(chromedp.CSS(form)))
	u.newPin("fetch_pod_logs", known, "", "")
	u.do("palette by keyboard", chromedp.Focus(chat), chromedp.SendKeys(chat, "/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="palette"]`)),
		chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="palette"]`)))
	u.setInput(`[data-testid="chat-input"]`, "")

	for _, w := range []struct {
		name   string
		width  int64
		height int64
	}{{"1280", 1280, 900}, {"768", 768, 1024}} {
		u.do("viewport "+w.name, chromedp.EmulateViewport(w.width, w.height))
		u.poll("viewport applied", fmt.Sprintf(`innerWidth === %d`, w.width))
		u.poll("cards settled", `!document.querySelector(".card[data-state=pending]")`)
		u.overflow("session page at " + w.name)
		u.shot("session-" + w.name)
		u.do("palette open at "+w.name, chromedp.Focus(chat), chromedp.SendKeys(chat, "/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="palette"]`)))
		u.overflow("palette at " + w.name)
		u.do("close palette", chromedp.KeyEvent(kb.Escape))
		u.setInput(`[data-testid="chat-input"]`, "")
		u.do("form open at "+w.name, chromedp.Click(chromedp.CSS(`.toolbar button[data-intent="fetch_pod_logs"]`)), chromedp.WaitVisible(chromedp.CSS(form)))
		u.overflow("form at " + w.name)
		u.shot("form-" + w.name)
		u.do("close form", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(form)))
		u.do("list at "+w.name, chromedp.Navigate(base+"/#/"), chromedp.WaitVisible(chromedp.CSS(link)))
		u.overflow("sessions list at " + w.name)
		u.shot("list-" + w.name)
		u.do("back to the session", chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="evidence-grid"]`)))
	}
	if !evalT[bool](u, `!!document.querySelector("[data-testid=conn].live")`) {
		t.Errorf("stream not live at the end; connection history (ms, class): %s", evalT[[]byte](u, `window.__conn`))
	}
	if errs := evalT[[]string](u, `window.__errors || []`); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
	t.Logf("connection history (ms since the session opened, class): %s", evalT[[]byte](u, `window.__conn`))
	t.Logf("browser steps took %s; screenshots in %s", time.Since(start).Round(time.Millisecond), shots)
}

// pinRecorder keeps, per pin card, the sequence of states it showed, so a
// test sees the amber step even when it lasts under a second.
const pinRecorder = `(() => {
  window.__seen = {}; window.__conn = [];
  const t0 = Date.now();
  const conn = () => { const c = document.querySelector("[data-testid=conn]"); const v = c ? c.className : "none";
    if (__conn[__conn.length - 1]?.[1] !== v) __conn.push([Date.now() - t0, v]); };
  const rec = el => { const a = (__seen[el.dataset.pin] ||= []); if (a[a.length - 1] !== el.dataset.state) a.push(el.dataset.state); };
  new MutationObserver(ms => { conn(); for (const m of ms) {
    if (m.type === "attributes" && m.target.dataset && m.target.dataset.pin) rec(m.target);
    for (const n of m.addedNodes || []) if (n.nodeType === 1) { if (n.dataset.pin) rec(n); n.querySelectorAll("[data-pin]").forEach(rec); }
  } }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state", "class"] });
})()`

type ui struct {
	t   *testing.T
	ctx context.Context
	dir string
	n   int
}

func (u *ui) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		u.shot("failed")
		u.t.Fatalf("%s: %v", what, err)
	}
}

func (u *ui) eval(js string) { u.t.Helper(); evalT[chromedp.Void](u, js) }

func evalT[T any](u *ui, js string) T {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		u.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// poll waits until the expression is truthy in the page.
func (u *ui) poll(what, js string) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, 40*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		u.shot("failed")
		u.t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

func (u *ui) value(css string) string {
	u.t.Helper()
	return evalT[string](u, fmt.Sprintf(`document.querySelector(%q).value`, css))
}

// setInput replaces a controlled input's text the way typing does.
func (u *ui) setInput(css, v string) {
	u.t.Helper()
	u.eval(fmt.Sprintf(`(() => { const el = document.querySelector(%q);
		Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(el, %q);
		el.dispatchEvent(new Event("input", { bubbles: true })); })()`, css, v))
}

func (u *ui) pinIDs() []string {
	u.t.Helper()
	return evalT[[]string](u, `[...document.querySelectorAll(".card[data-pin]")].map(c => c.dataset.pin)`)
}

// newPin waits for a card from tool (any tool when empty) that is not in known, highlighted as the
// page's own request, checks it was pending before its final state, and
// returns its id. pendingShot and finalShot name optional screenshots.
func (u *ui) newPin(tool string, known []string, pendingShot, finalShot string) string {
	u.t.Helper()
	knownJSON, _ := json.Marshal(known)
	css := ".card.highlight"
	if tool != "" {
		css += fmt.Sprintf("[data-tool=%q]", tool)
	}
	sel := fmt.Sprintf(`[...document.querySelectorAll('%s')].find(c => !%s.includes(c.dataset.pin))`, css, knownJSON)
	u.poll("new "+tool+" card", "!!"+sel)
	id := evalT[string](u, sel+".dataset.pin")
	if pendingShot != "" {
		u.shot(pendingShot)
	}
	u.poll(tool+" card final", fmt.Sprintf(`["validated", "rejected"].includes(document.querySelector('[data-pin=%q]').dataset.state)`, id))
	states := evalT[[]string](u, fmt.Sprintf(`(window.__seen || {})[%q] || []`, id))
	if len(states) < 2 || states[0] != "pending" {
		u.t.Errorf("card %s of %s went through %v, want pending then a verdict (connection history: %s)", id, tool, states, evalT[[]byte](u, `window.__conn`))
	}
	if finalShot != "" {
		u.shot(finalShot)
	}
	return id
}

func (u *ui) overflow(what string) {
	u.t.Helper()
	if w := evalT[[]float64](u, `[document.documentElement.scrollWidth, innerWidth]`); w[0] > w[1] {
		wide := evalT[[]string](u, `[...document.querySelectorAll("body *")].map(e => [e, e.getBoundingClientRect().right + scrollX])
			.filter(([e, r]) => r > innerWidth + 1 && !(e.parentElement && e.parentElement.getBoundingClientRect().right + scrollX > innerWidth + 1))
			.slice(0, 5).map(([e, r]) => e.tagName + "." + e.className + " right=" + Math.round(r))`)
		u.t.Errorf("%s: horizontal overflow, scrollWidth %.0f > innerWidth %.0f; widest: %v", what, w[0], w[1], wide)
	}
}

func (u *ui) shot(name string) {
	u.t.Helper()
	u.n++
	ctx, cancel := context.WithTimeout(u.ctx, 15*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		u.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(u.dir, fmt.Sprintf("%02d-%s.png", u.n, name)), buf, 0o644); err != nil {
		u.t.Errorf("save screenshot: %v", err)
	}
}

// findChromium locates a Chromium; without one the test skips, except in CI.
func findChromium(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "headless-shell"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (install Debian's chromium or set CHROMIUM); the browser test must run in CI")
	}
	t.Skip("no Chromium found; set CHROMIUM or install chromium")
	return ""
}

// artifactsDir is $RCAMESH_ARTIFACTS, else a fresh folder under the temp dir
// that outlives the test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RCAMESH_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rcamesh-webui-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", dir)
	return dir
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func restPins(t *testing.T, base, sid string) []map[string]any {
	t.Helper()
	var out struct {
		Pins []map[string]any `json:"pins"`
	}
	getJSON(t, base+"/api/v4/session/"+sid+"/pins", &out)
	return out.Pins
}

type restTool struct {
	Intent       string `json:"intent"`
	Label        string `json:"label"`
	SlashCommand string `json:"slash_command"`
	Available    bool   `json:"available"`
	// UnavailableReason says why a tool is dimmed.
	UnavailableReason string `json:"unavailable_reason"`
	Params            []struct {
		Name    string   `json:"name"`
		Options []string `json:"options"`
	} `json:"params_schema"`
}

func (r restTool) options(name string) []string {
	for _, p := range r.Params {
		if p.Name == name && len(p.Options) > 0 {
			return p.Options
		}
	}
	return []string{""}
}

func restTools(t *testing.T, base, sid string) map[string]restTool {
	t.Helper()
	var out struct {
		Tools []restTool `json:"tools"`
	}
	getJSON(t, base+"/api/v4/session/"+sid+"/tools", &out)
	m := map[string]restTool{}
	for _, tool := range out.Tools {
		m[tool.Intent] = tool
	}
	return m
}

// waitSessionDone polls the sessions API until the automated investigation
// left the running state.
func waitSessionDone(t *testing.T, base, sid string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var out struct {
			Session struct {
				State string `json:"state"`
			} `json:"session"`
		}
		getJSON(t, base+"/api/v4/session/"+sid, &out)
		if s := out.Session.State; s != "" && s != "running" && s != "queued" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("session %s still running after 60s", sid)
}

func duplicates(ids []string) []string {
	seen := map[string]int{}
	var dup []string
	for _, id := range ids {
		if seen[id]++; seen[id] == 2 {
			dup = append(dup, id)
		}
	}
	return dup
}
