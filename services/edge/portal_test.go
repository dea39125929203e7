package edge

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestPortalGolden renders the page in three scenarios at the fixed clock
// and compares status, headers and body with testdata/portal/.
func TestPortalGolden(t *testing.T) {
	for _, name := range []string{"full", "empty", "not-indexed", "max-not-disclosed"} {
		t.Run(name, func(t *testing.T) {
			h := newScenarioHarness(t, name)
			scenarios[name](h)
			h.refresh()
			rec := h.do(http.MethodGet, view.PathPortal)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /: %d %s", rec.Code, rec.Body)
			}
			checkGolden(t, "portal/"+name, dump(rec))
			idx := h.do(http.MethodGet, view.PathPortalIndex)
			if idx.Body.String() != rec.Body.String() || idx.Header().Get("Etag") != rec.Header().Get("Etag") {
				t.Error("/index.html differs from /")
			}
		})
	}
}

// TestPortalFiguresAreTheAPIs: every figure of the page carries the
// exact value /api/market states, and reads as the formatting rules say.
func TestPortalFiguresAreTheAPIs(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	page := h.do(http.MethodGet, view.PathPortal).Body.String()
	dec := json.NewDecoder(h.do(http.MethodGet, view.PathMarket).Body)
	dec.UseNumber()
	var market map[string]any
	if err := dec.Decode(&market); err != nil {
		t.Fatal(err)
	}
	page = html.UnescapeString(page)
	re := regexp.MustCompile(`<data class="fig[^"]*" data-k="([a-z0-9_]+)" data-f="([a-z]+)" value="([^"]*)">([^<]*)</data>`)
	found := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		key, kind, value, text := m[1], m[2], m[3], m[4]
		found[key] = true
		want, ok := market[key].(json.Number)
		if !ok {
			t.Errorf("%s: /api/market has %v", key, market[key])
			continue
		}
		if value != want.String() {
			t.Errorf("%s: page value %q, API %q", key, value, want)
		}
		if text != view.FormatFigure(kind, want.String()) {
			t.Errorf("%s: page reads %q, want %q", key, text, view.FormatFigure(kind, want.String()))
		}
	}
	for _, k := range []string{"price_usd", "market_cap_usd", "fdv_usd", "holders", "total_supply", "circulating_supply",
		"max_supply", "liquidity_usd", "volume_24h_usd", "txns_24h", "price_change_24h_percent"} {
		if !found[k] {
			t.Errorf("the page shows no %s", k)
		}
	}
}

func TestFormatFigure(t *testing.T) {
	for _, c := range []struct{ kind, in, want string }{
		{"usd", "0.005747", "$0.005747"},
		{"usd", "1234.5", "$1,234.5"},
		{"money", "5676303.0345", "$5,676,303.03"},
		{"money", "0.005", "$0.01"},
		{"money", "999.995", "$1,000.00"},
		{"money", "12", "$12.00"},
		{"pct", "-3.125", "−3.13 %"},
		{"pct", "4.2", "+4.20 %"},
		{"pct", "0.001", "0.00 %"},
		{"amount", "987654321.123456", "987,654,321.123456"},
		{"count", "100", "100"},
		{"count", "1000", "1,000"},
	} {
		if got := view.FormatFigure(c.kind, c.in); got != c.want {
			t.Errorf("formatFigure(%s, %s) = %q, want %q", c.kind, c.in, got, c.want)
		}
	}
}

// TestPortalEscapesUpstreamText: a token name, a link and an on-chain
// name made to break out of the markup render as text.
func TestPortalEscapesUpstreamText(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	tok := edgetest.Token()
	tok.Name = evil
	tok.Symbol = `<i>X</i>`
	tok.Description = `"><img src=x onerror=alert(2)>`
	tok.Links[0].URL = `https://example.com/?q="><script>alert(3)</script>`
	h := newHarnessOf(t, tok, nil)
	h.writeAll()
	md := edgetest.Metadata()
	md.Warnings = append(md.Warnings, contract.Warning{Code: "x", Message: evil})
	h.write(contract.DomainMetadata, md, 0)
	h.refresh()
	body := h.do(http.MethodGet, view.PathPortal).Body.String()
	for _, bad := range []string{"<script>alert", "<img src=x", "<i>X"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile name is not shown escaped")
	}
	if n := strings.Count(body, "<script"); n != 1 {
		t.Errorf("%d script elements, want the one of the page's own script", n)
	}
}

// TestPortalHeaders: the page's policy, its cache group, and that it
// names only assets the edge serves, each under 100 KB with the page.
func TestPortalHeaders(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	rec := h.do(http.MethodGet, view.PathPortal, "Accept-Encoding", "gzip")
	hd := rec.Header()
	csp := hd.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
		"img-src 'self' https://example.com", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows something unsafe", csp)
	}
	if hd.Get("Cache-Control") != DefaultConfig().CacheControlMarket || hd.Get("Content-Type") != view.ContentHTML ||
		hd.Get("Content-Encoding") != "gzip" || hd.Get("Vary") != "Accept-Encoding" {
		t.Errorf("headers %v", hd)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?i)<script>|<style|style="|\son[a-z]+=`).Match(page) {
		t.Error("the page has inline script or style, or an event handler attribute")
	}
	wire := rec.Body.Len()
	refs := regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) != 3 {
		t.Fatalf("the page names %d assets, want 3", len(refs))
	}
	for _, m := range refs {
		a := h.do(http.MethodGet, m[1], "Accept-Encoding", "gzip")
		if a.Code != http.StatusOK || a.Header().Get("Cache-Control") != view.CacheImmutable || a.Header().Get("Etag") == "" {
			t.Errorf("%s: %d %v", m[1], a.Code, a.Header())
		}
		wire += a.Body.Len()
	}
	t.Logf("page %d bytes, %d gzip; with its assets %d bytes gzip over the wire", len(page), rec.Body.Len(), wire)
	if wire > 100_000 {
		t.Errorf("page and assets weigh %d bytes over the wire, want under 100 KB", wire)
	}
	if rec := h.do(http.MethodGet, "/assets/portal-000000000000.css"); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown asset: %d", rec.Code)
	}
}

// TestPortalOff: EDGE_PORTAL=off leaves / to the API's JSON 404.
func TestPortalOff(t *testing.T) {
	h := newHarness(t, nil, func(_ *config.Common, c *Config, _ *Deps) { c.Portal = "off" })
	h.writeAll()
	h.refresh()
	for _, p := range []string{view.PathPortal, view.PathPortalIndex, "/assets/x.css"} {
		rec := h.do(http.MethodGet, p)
		checkCommon(t, p, rec)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"not_found"`) {
			t.Errorf("%s with the portal off: %d %s", p, rec.Code, rec.Body)
		}
	}
	if h.srv.mirror.View().Routes[view.RoutePortal] != nil {
		t.Error("the page is rendered with the portal off")
	}
	cfg := DefaultConfig()
	cfg.Portal = "no"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "EDGE_PORTAL") {
		t.Errorf("EDGE_PORTAL=no: %v", err)
	}
}
