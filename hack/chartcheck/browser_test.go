package chartcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// eventsPage is a page of another origin that follows the supply with the
// browser's EventSource, as a dashboard would: every supply event's total
// in window.supplies and the title, every error in window.errors.
const eventsPage = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>waiting</title></head>
<body><p id="supply">none</p>
<script>
window.supplies = [];
window.errors = 0;
const es = new EventSource(%q);
es.addEventListener("supply", function (e) {
  const total = JSON.parse(e.data).total_supply_raw;
  window.supplies.push(total);
  document.getElementById("supply").textContent = total;
  document.title = "supply " + total;
});
es.onerror = function () { window.errors++; };
</script></body></html>`

// TestEventsInBrowserThroughCacheTier: a real Chromium (headless) loads a
// page from another origin (a loopback port of its own) whose
// EventSource reads /api/events through the chart's nginx tier in front of
// a running edge; the page gets the ledger's supply, then a burn on the
// simulated ledger within burnBound. Cross-origin works because the edge
// sends Access-Control-Allow-Origin: * on the stream and nginx passes it.
func TestEventsInBrowserThroughCacheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Chromium against nginx in front of a running edge")
	}
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run hack/install-chart-deps.sh (it installs Debian's chromium)")
	}
	tier := startLiveTier(t, nil)
	stream := tier.cache + "/api/events"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, eventsPage, stream)
	}))
	t.Cleanup(site.Close)
	// Another origin: "localhost" and a port of its own, against nginx on
	// 127.0.0.1.
	pageURL := strings.Replace(site.URL, "127.0.0.1", "localhost", 1) + "/"

	ctx, problems := newEventsBrowser(t, chrome)
	if err := chromedp.Run(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	supplies := func() []string {
		t.Helper()
		var got []string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`window.supplies`, &got)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	waitFor := func(want string, d time.Duration) (time.Time, bool) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got := supplies(); len(got) > 0 && got[len(got)-1] == want {
				return time.Now(), true
			}
		}
		return time.Time{}, false
	}
	before, _ := tier.ledger.sim.RPC.Supply(eventsMint)
	if _, ok := waitFor(strconv.FormatUint(before, 10), 20*time.Second); !ok {
		t.Fatalf("the page shows no supply %d within 20 s: supplies %v; browser: %v", before, supplies(), problems())
	}
	want := tier.ledger.burn(t, 7_000_000)
	burnt := time.Now()
	at, ok := waitFor(want, burnBound)
	if !ok {
		t.Fatalf("the page does not show the burn (%s) within %s: supplies %v; browser: %v", want, burnBound, supplies(), problems())
	}
	var title string
	var errs int
	if err := chromedp.Run(ctx, chromedp.Title(&title), chromedp.Evaluate(`window.errors`, &errs)); err != nil {
		t.Fatal(err)
	}
	if title != "supply "+want || errs != 0 {
		t.Errorf("title %q, %d EventSource errors; want %q and none", title, errs, "supply "+want)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the browser reported: %v", p)
	}
	t.Logf("a burn reached a Chromium EventSource of another origin through nginx in %s (SUPPLY_REFRESH=%s)",
		at.Sub(burnt).Round(time.Millisecond), supplyPoll)
}

// newEventsBrowser starts a headless Chromium for the test; problems
// returns what its console and log reported (errors and warnings: a CORS
// refusal is one).
func newEventsBrowser(t *testing.T, chrome string) (context.Context, func() []string) {
	t.Helper()
	// The profile is removed after the browser is gone (t.TempDir's own
	// cleanup can race its last writes).
	profile, err := os.MkdirTemp("", "events-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.UserDataDir(profile),
		// its temporary files (the org.chromium.Chromium.* folders of
		// --disable-dev-shm-usage) in the profile too, removed with it
		chromedp.Env("TMPDIR=" + profile),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("mute-audio", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("the browser profile %s could not be removed", profile)
	})
	var (
		mu   sync.Mutex
		seen []string
	)
	chromedp.ListenTarget(ctx, func(e any) {
		var p string
		switch e := e.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + e.ExceptionDetails.Error()
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				p = fmt.Sprintf("console.%s", e.Type)
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError || e.Entry.Level == cdplog.LevelWarning {
				p = fmt.Sprintf("log %s/%s: %s %s", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL)
			}
		}
		if p != "" {
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
