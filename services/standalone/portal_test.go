package standalone_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
)

// browserEvents is what the browser reported while the test ran.
type browserEvents struct {
	mu       sync.Mutex
	problems []string
	requests []string
}

func (b *browserEvents) add(list *[]string, format string, a ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*list = append(*list, fmt.Sprintf(format, a...))
}

func (b *browserEvents) snapshot() (problems, requests []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...), append([]string(nil), b.requests...)
}

// cspProbe runs in every document before its own scripts (the debugger's
// scripts are outside the page's policy): it keeps each
// securitypolicyviolation event for the test to read.
const cspProbe = `window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI);
});`

// logoSVG stands in for the issuer's logo host, which this closed
// network cannot reach: the browser's request for the token file's logo
// is answered by the test, so the page loads as it would on the
// Internet, and any other request outside the edge is seen.
const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48"><circle cx="24" cy="24" r="24" fill="#7c4dff"/><text x="24" y="31" font-size="20" text-anchor="middle" fill="#fff" font-family="sans-serif">D</text></svg>`

// TestPortalInBrowser loads the portal of standalone demo mode in
// headless Chromium: the figures it shows are the API's, nothing is
// logged to the console, no policy is violated, nothing is fetched from
// anywhere but the edge (and the token's own logo host), a hostile token
// name is text, the script's refresh writes the figures as the server
// does, and screenshots at 1280 and 360 px go to PORTAL_SCREENSHOTS (a
// temporary directory when unset).
func TestPortalInBrowser(t *testing.T) {
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run hack/install-test-deps.sh (it installs Debian's chromium)")
	}
	out := os.Getenv("PORTAL_SCREENSHOTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	r := start(t, simulator.Options{Seed: 7, Accounts: 2000})
	base := r.info.API
	for _, p := range []string{"/api/supply", "/api/price", "/api/holders"} {
		waitFor(t, base, p)
	}
	hostileBase := hostileEdge(t, r)
	waitFor(t, hostileBase, "/api/price")

	ctx, events := newBrowser(t, chrome, r.info.Token.Logo)
	if err := chromedp.Run(ctx, emulation.SetDeviceMetricsOverride(1280, 900, 1, false),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible("#h-market", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	figs := pageFigures(t, ctx)
	api := apiFigures(t, base)
	for key, want := range api {
		got, ok := figs[key]
		if !ok {
			t.Errorf("the page shows no %s", key)
			continue
		}
		if got.Value != want.value || got.Text != want.text {
			t.Errorf("%s: page %q (%q), API %q (reads %q)", key, got.Value, got.Text, want.value, want.text)
		}
	}

	// The script ran under the policy (it shows the copy buttons), and
	// its refresh writes what the server wrote: spoil the figures, make
	// the tab visible again, and wait for the API's values.
	var shown bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(`!document.querySelector("button.copy").hidden`, &shown)); err != nil || !shown {
		t.Errorf("the copy buttons are hidden (the script did not run): %v", err)
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("data.fig").forEach(function (d) {
		d.setAttribute("value", "1"); d.textContent = "spoiled"; });
		document.dispatchEvent(new Event("visibilitychange")); true`, nil)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		again := pageFigures(t, ctx)
		diff := ""
		for key, want := range api {
			if got := again[key]; got.Value != want.value || got.Text != want.text {
				diff += fmt.Sprintf(" %s=%q(%q) want %q(%q)", key, got.Value, got.Text, want.value, want.text)
			}
		}
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after the script's refresh:%s", diff)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The charts have points: demo mode's seeded 30 days, drawn as a line
	// (a path with at least one segment) in every chart the page shows.
	var charts []struct {
		Title string `json:"title"`
		Segs  int    `json:"segs"`
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll("svg.chart")).map(function (s) {
		var d = Array.from(s.querySelectorAll("path.line")).map(function (p) { return p.getAttribute("d") }).join(" ");
		return {title: s.querySelector("title") ? s.querySelector("title").textContent : "", segs: (d.match(/L/g) || []).length};
	})`, &charts)); err != nil {
		t.Fatal(err)
	}
	if len(charts) < 4 {
		t.Errorf("%d charts on the page, want price, market cap, liquidity, holders and supply: %+v", len(charts), charts)
	}
	for _, c := range charts {
		if c.Segs < 10 {
			t.Errorf("chart %q has %d line segments: the seeded history has hundreds of points", c.Title, c.Segs)
		}
	}

	shot(t, ctx, filepath.Join(out, "portal-1280.png"), 1280, 900, false)
	shot(t, ctx, filepath.Join(out, "portal-360.png"), 360, 740, false)
	var overflow int64
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)); err != nil || overflow > 0 {
		t.Errorf("at 360 px the page is %d px wider than the viewport (%v)", overflow, err)
	}
	if err := chromedp.Run(ctx, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{
		{Name: "prefers-color-scheme", Value: "dark"}})); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, filepath.Join(out, "portal-360-dark.png"), 360, 740, false)
	checkCSP(t, ctx, "demo page")

	// The hostile token name is text: the heading reads it, no dialog
	// opened, and the page's only script is its own.
	var heading string
	var scripts int64
	if err := chromedp.Run(ctx, chromedp.Navigate(hostileBase+"/"), chromedp.WaitVisible("h1", chromedp.ByQuery),
		chromedp.Text("h1", &heading, chromedp.ByQuery),
		chromedp.Evaluate(`document.scripts.length`, &scripts)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(heading, hostileName) || scripts != 1 {
		t.Errorf("hostile name: heading %q, %d scripts", heading, scripts)
	}
	checkCSP(t, ctx, "hostile page")

	problems, requests := events.snapshot()
	for _, p := range problems {
		t.Errorf("browser: %s", p)
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, hostileBase+"/") && u != r.info.Token.Logo {
			t.Errorf("a request outside the edge: %s", u)
		}
	}
	if len(requests) < 8 {
		t.Errorf("only %d requests seen: %v", len(requests), requests)
	}
	t.Logf("screenshots in %s; %d requests", out, len(requests))
}

const hostileName = `<script>alert(1)</script>`

// hostileEdge runs a second edge over the demo's store whose token file
// names the token <script>alert(1)</script>.
func hostileEdge(t *testing.T, r *running) string {
	t.Helper()
	tok := r.info.Token
	tok.Name = hostileName
	common, err := config.LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	common.DrainDelay = 0
	_, base := runEdge(t, common, tok, edge.Deps{Store: r.info.Store, Demo: true})
	return base
}

// newBrowser starts headless Chromium with a fresh profile and nothing
// that reaches out on its own, and records console messages, log
// entries, exceptions, dialogs and every request. The token's logo is
// answered by the test.
func newBrowser(t *testing.T, chrome, logo string, refused ...string) (context.Context, *browserEvents) {
	t.Helper()
	// The profile is removed after the browser is gone (t.TempDir's own
	// cleanup can race its last writes).
	profile, err := os.MkdirTemp("", "portal-chromium-")
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
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
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
	patterns := []*cdpfetch.RequestPattern{{URLPattern: logo}}
	for _, u := range refused {
		patterns = append(patterns, &cdpfetch.RequestPattern{URLPattern: u})
	}
	ev := &browserEvents{}
	chromedp.ListenTarget(ctx, func(e any) {
		switch e := e.(type) {
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			ev.add(&ev.problems, "console.%s: %s", e.Type, strings.Join(args, " "))
		case *runtime.EventExceptionThrown:
			ev.add(&ev.problems, "exception: %s", e.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError || e.Entry.Level == cdplog.LevelWarning || e.Entry.Source == cdplog.SourceSecurity {
				ev.add(&ev.problems, "log %s/%s: %s %s", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			ev.add(&ev.problems, "dialog opened: %s", e.Message)
		case *network.EventRequestWillBeSent:
			ev.add(&ev.requests, "%s", e.Request.URL)
		case *cdpfetch.EventRequestPaused:
			go func() {
				c := chromedp.FromContext(ctx)
				f := cdpfetch.FulfillRequest(e.RequestID, 200).
					WithResponseHeaders([]*cdpfetch.HeaderEntry{{Name: "Content-Type", Value: "image/svg+xml"}}).
					WithBody(base64.StdEncoding.EncodeToString([]byte(logoSVG)))
				if e.Request.URL != logo {
					// A refused URL: the edge's answer past EDGE_MAX_EVENT_STREAMS.
					f = cdpfetch.FulfillRequest(e.RequestID, 503).
						WithResponseHeaders([]*cdpfetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"},
							{Name: "Cache-Control", Value: "no-store"}, {Name: "Retry-After", Value: "30"}}).
						WithBody(base64.StdEncoding.EncodeToString([]byte(`{"error":{"code":"too_many_streams","message":"busy","status":503}}`)))
				}
				err := f.Do(cdp.WithExecutor(ctx, c.Target))
				if err != nil && ctx.Err() == nil {
					ev.add(&ev.problems, "answering the logo: %v", err)
				}
			}()
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable(), network.Enable(),
		cdpfetch.Enable().WithPatterns(patterns),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(cspProbe).Do(ctx)
			return err
		})); err != nil {
		t.Fatal(err)
	}
	return ctx, ev
}

type shownFigure struct {
	Value string `json:"value"`
	Text  string `json:"text"`
}

// pageFigures reads every <data> figure of the page: its exact value and
// its text.
func pageFigures(t *testing.T, ctx context.Context) map[string]shownFigure {
	t.Helper()
	var raw string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`JSON.stringify(Object.fromEntries(
		Array.from(document.querySelectorAll("data.fig[data-k]")).map(function (d) {
			return [d.dataset.k, {value: d.value, text: d.textContent}]; })))`, &raw)); err != nil {
		t.Fatal(err)
	}
	out := map[string]shownFigure{}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type apiFigure struct{ value, text string }

// apiFigures are the API's price, supply, holders and market cap, read
// over HTTP, with the text the page must show for each.
func apiFigures(t *testing.T, base string) map[string]apiFigure {
	t.Helper()
	read := func(path string) map[string]json.Number {
		_, body := get(t, base+path)
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out := map[string]json.Number{}
		for k, v := range m {
			if n, ok := v.(json.Number); ok {
				out[k] = n
			}
		}
		return out
	}
	price, supply, holders, market := read("/api/price"), read("/api/supply"), read("/api/holders"), read("/api/market")
	group := func(s string) string {
		ip, frac, ok := strings.Cut(s, ".")
		var b strings.Builder
		for i := range ip {
			if i > 0 && (len(ip)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteByte(ip[i])
		}
		if ok {
			b.WriteString("." + frac)
		}
		return b.String()
	}
	cents := func(s string) string { return "$" + group(decimal.RequireFromString(s).Round(2).StringFixed(2)) }
	figs := map[string]apiFigure{
		"price_usd":          {price["price_usd"].String(), "$" + group(price["price_usd"].String())},
		"total_supply":       {supply["total_supply"].String(), group(supply["total_supply"].String())},
		"circulating_supply": {supply["circulating_supply"].String(), group(supply["circulating_supply"].String())},
		"max_supply":         {supply["max_supply"].String(), group(supply["max_supply"].String())},
		"holders":            {holders["holders"].String(), group(holders["holders"].String())},
		"market_cap_usd":     {market["market_cap_usd"].String(), cents(market["market_cap_usd"].String())},
		"fdv_usd":            {market["fdv_usd"].String(), cents(market["fdv_usd"].String())},
		"liquidity_usd":      {market["liquidity_usd"].String(), cents(market["liquidity_usd"].String())},
	}
	for k, f := range figs {
		if f.value == "" {
			t.Fatalf("the API has no %s", k)
		}
	}
	return figs
}

// shot sets the viewport and writes a full-page PNG to path.
func shot(t *testing.T, ctx context.Context, path string, w, h int64, mobile bool) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, emulation.SetDeviceMetricsOverride(w, h, 1, mobile),
		chromedp.Sleep(100*time.Millisecond), chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("%s: not a PNG", path)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkCSP fails on any securitypolicyviolation the current document saw.
func checkCSP(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var v []string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__csp || ["probe missing"]`, &v)); err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Errorf("%s: policy violations %v", what, v)
	}
}
