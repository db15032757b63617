package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rcamesh/rcamesh/internal/auth"
)

// TestWebUIWithToken: with API tokens on, the war room asks for a token,
// then works with it (typed into the form or given once as ?token=, which
// leaves the address bar at once).
func TestWebUIWithToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives a browser")
	}
	browser := findChromium(t)
	const token = "web-ui-test-token-0123456789"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("web read,steer "+auth.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	startBinary(t, httpAddr, "-target=all", "-data.dir="+filepath.Join(dir, "data"), "-http.addr="+httpAddr, "-grpc.addr="+grpcAddr,
		"-tools.scenario="+demoScenario, "-auth.tokens-file="+tokens)
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
	u := &ui{t: t, ctx: bctx, dir: artifactsDir(t)}

	u.do("open without a token", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin"]`)))
	u.do("sign in", chromedp.SendKeys(chromedp.CSS(`#token`), token), chromedp.Click(chromedp.CSS(`[data-testid="signin"] button`)))
	u.poll("the list after signing in", `document.querySelector("main").innerText.includes("No alerts received yet")`)

	u.eval(`sessionStorage.clear()`)
	u.do("open with ?token=", chromedp.Navigate(base+"/?token="+token+"#/"))
	u.poll("the list with ?token=", `document.querySelector("main").innerText.includes("No alerts received yet")`)
	u.poll("the token left the address bar", `!location.href.includes("token")`)
	u.shot("signed-in")
}
