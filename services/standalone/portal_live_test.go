package standalone_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
)

// portalPoll is the portal script's poll period (portal.js PERIOD).
const portalPoll = 30 * time.Second

// TestPortalLiveInBrowser: the portal page in headless Chromium follows
// the event stream. A burn on the simulated ledger (the supply polled
// every second) reaches the page's total supply within seconds, with no
// poll of /api/market meanwhile (the script skips its poll while market
// events come); and when the stream is refused (503 too_many_streams, which
// EventSource does not retry), the page falls back to its 30 s poll.
func TestPortalLiveInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for the portal's 30 s poll")
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run hack/install-test-deps.sh (it installs Debian's chromium)")
	}
	r := start(t, simulator.Options{Seed: 7, Accounts: 2000}, func(c *config.Common) {
		c.Supply = config.DomainTiming{Refresh: time.Second, StaleAfter: 10 * time.Second, TTL: time.Hour}
	})
	base := r.info.API
	for _, p := range []string{"/api/supply", "/api/price", "/api/holders", "/api/market"} {
		waitFor(t, base, p)
	}

	t.Run("a burn reaches the page through the stream", func(t *testing.T) {
		ctx, events := newBrowser(t, chrome, r.info.Token.Logo)
		if err := chromedp.Run(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#h-market", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitRequest(t, events, base+"/api/events", 10*time.Second)
		_, loaded := events.snapshot()

		before := pageFigures(t, ctx)["total_supply"].Value
		cur, ok := r.info.Sim.RPC.Supply(config.DemoMint)
		if !ok {
			t.Fatal("the simulator has no supply")
		}
		if err := r.info.Sim.RPC.SetSupply(config.DemoMint, cur-5_000_000_000); err != nil { // 5,000 tokens burnt
			t.Fatal(err)
		}
		burnt := time.Now()
		// The API's new total, then the page's.
		var want string
		for deadline := time.Now().Add(10 * time.Second); want == "" || want == before; time.Sleep(50 * time.Millisecond) {
			var m struct {
				Total json.Number `json:"total_supply"`
			}
			_, body := get(t, base+"/api/market")
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			want = string(m.Total)
			if time.Now().After(deadline) {
				t.Fatalf("/api/market's total_supply still %s 10 s after the burn", want)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if got := pageFigures(t, ctx)["total_supply"]; got.Value == want {
				t.Logf("the page shows the burn %s after it (total %s, %q)", time.Since(burnt).Round(time.Millisecond), got.Value, got.Text)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page's total supply is %+v 10 s after /api/market's %s (its poll is every %s)", pageFigures(t, ctx)["total_supply"], want, portalPoll)
			}
		}
		_, after := events.snapshot()
		for _, u := range after[len(loaded):] {
			if strings.HasPrefix(u, base+"/api/market") {
				t.Errorf("the page polled %s while the stream delivered", u)
			}
		}
		checkCSP(t, ctx, "live page")
		problems, _ := events.snapshot()
		for _, p := range problems {
			t.Errorf("browser: %s", p)
		}
	})

	t.Run("a refused stream falls back to the poll", func(t *testing.T) {
		ctx, events := newBrowser(t, chrome, r.info.Token.Logo, base+"/api/events")
		if err := chromedp.Run(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#h-market", chromedp.ByID)); err != nil {
			t.Fatal(err)
		}
		waitRequest(t, events, base+"/api/events", 10*time.Second)
		// Spoil a figure: the poll writes it back.
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('data.fig[data-k="holders"]').setAttribute("value", "1"); true`, nil)); err != nil {
			t.Fatal(err)
		}
		waitRequest(t, events, base+"/api/market", portalPoll+15*time.Second)
		for deadline := time.Now().Add(10 * time.Second); pageFigures(t, ctx)["holders"].Value == "1"; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the poll did not write the holders back")
			}
		}
		problems, _ := events.snapshot()
		for _, p := range problems {
			// The refused stream is the browser's own error, as it would
			// be with the edge's 503.
			if !strings.Contains(p, "/api/events") && !strings.Contains(p, "503") {
				t.Errorf("browser: %s", p)
			}
		}
	})
}

// waitRequest waits until the browser requested u.
func waitRequest(t *testing.T, events *browserEvents, u string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, reqs := events.snapshot()
		for _, r := range reqs {
			if strings.HasPrefix(r, u) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not request %s within %s: %v", u, d, reqs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
