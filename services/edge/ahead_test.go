package edge

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/mirror"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestAheadViewIsTheBoundarysView: the view rendered before a boundary,
// for the boundary's instant, is the one a render at the boundary gives,
// byte for byte in every variant; once the clock passes the boundary, a
// request is served from it without rendering (counted "ahead", none
// "rendered"), and the answer is flagged stale.
func TestAheadViewIsTheBoundarysView(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll() // updated 30 s ago
	// the market document goes stale at its stale-after: the boundary
	h.refresh()
	v := h.srv.mirror.View()
	if v.NextChange.IsZero() {
		t.Fatal("no boundary ahead")
	}
	h.clock.t = v.NextChange.Add(-50 * time.Millisecond)
	h.srv.prerender()
	base, next := h.srv.mirror.Ahead()
	if next == nil || base != v {
		t.Fatal("nothing rendered ahead")
	}
	want := h.srv.bodies.Render(snapshot.Expire(v.State, v.NextChange), v, v.NextChange)
	for i := range want.Routes {
		x, y := next.Routes[i], want.Routes[i]
		if (x == nil) != (y == nil) {
			t.Fatalf("route %d: rendered ahead %v, at the boundary %v", i, x != nil, y != nil)
		}
		if x == nil {
			continue
		}
		if x.Status != y.Status || !bytes.Equal(x.Body, y.Body) || x.ETag != y.ETag || !x.LastModified.Equal(y.LastModified) {
			t.Errorf("route %s differs: %d %q %s / %d %q %s", view.RenderedRoutes[i].Path, x.Status, x.ETag, x.Body, y.Status, y.ETag, y.Body)
		}
	}

	h.clock.t = v.NextChange.Add(time.Millisecond)
	rec := h.do(http.MethodGet, view.PathPrice)
	if rec.Code != http.StatusOK || rec.Header().Get("X-Data-Stale") != "true" {
		t.Fatalf("past the boundary: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if h.srv.mirror.View() != next {
		t.Error("the view served past the boundary is not the one rendered ahead")
	}
	ahead := h.metric("tokendata_edge_snapshot_boundaries_total", "how", mirror.BoundaryAhead)
	rendered := h.metric("tokendata_edge_snapshot_boundaries_total", "how", mirror.BoundaryRendered)
	if ahead != 1 || rendered != 0 {
		t.Errorf("boundaries: ahead %v, rendered %v; want 1 and 0", ahead, rendered)
	}
}

// TestAheadViewObsoleteAfterANewDocument: a document published between
// the render ahead and the boundary makes the view rendered ahead
// obsolete: the new document is served, never the view rendered from the
// one it replaced.
func TestAheadViewObsoleteAfterANewDocument(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	v := h.srv.mirror.View()
	h.clock.t = v.NextChange.Add(-50 * time.Millisecond)
	h.srv.prerender()
	m := edgetest.Market()
	m.PriceUSD = decimalPtr("0.00004321")
	m.Selected.PriceUSD = m.PriceUSD
	h.write(contract.DomainMarket, m, 0)
	h.refresh()
	h.clock.t = v.NextChange.Add(time.Millisecond)
	rec := h.do(http.MethodGet, view.PathPrice)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"price_usd":0.00004321`) {
		t.Fatalf("past the boundary after a new price: %d %s", rec.Code, rec.Body)
	}
}

// TestRefresherRendersAhead: with the refresher running on the real clock
// and a market stale-after of three seconds, the boundary is crossed with
// a view rendered ahead: no request or timer renders at the boundary.
// (The first render must end before the boundary for a view to be
// rendered ahead of it: under -race on a busy machine it took 1.1 s, past
// the one second this test first gave it.)
func TestRefresherRendersAhead(t *testing.T) {
	h := newHarness(t, nil, func(c *config.Common, _ *Config, d *Deps) {
		d.Now = time.Now
		c.Market = config.DomainTiming{Refresh: time.Second, StaleAfter: 3 * time.Second, TTL: time.Hour}
	})
	if err := edgetest.WriteDoc(context.Background(), h.store, contract.DomainMarket, edgetest.Market(), time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Refresher(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec := h.do(http.MethodGet, view.PathPrice)
		if rec.Header().Get("X-Data-Stale") == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not stale 15 s after a stale-after of 3 s: %d %v", rec.Code, rec.Header())
		}
		time.Sleep(5 * time.Millisecond)
	}
	ahead := h.metric("tokendata_edge_snapshot_boundaries_total", "how", mirror.BoundaryAhead)
	rendered := h.metric("tokendata_edge_snapshot_boundaries_total", "how", mirror.BoundaryRendered)
	if ahead < 1 || rendered != 0 {
		t.Errorf("boundaries: ahead %v, rendered %v; want the boundary crossed ahead", ahead, rendered)
	}
}
