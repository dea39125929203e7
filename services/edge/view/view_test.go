package view

// The view rendered on its own: documents in, answers out, with no
// server, no listener and no store. The wire (headers the server adds,
// negotiation, 304s) is tested through the real engine in package edge,
// whose goldens these answers are.

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// t0 is the fixed "now" of these tests.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// inputs are the render inputs of edgetest.Token() at the default
// timings, without the portal.
func inputs(t testing.TB) *RenderInputs {
	t.Helper()
	token := edgetest.Token()
	var common config.Common
	timings := contract.DefaultTimings
	return &RenderInputs{Token: token, RetryAfter: 30 * time.Second, Timings: timings,
		Redactor: NewRedactor(common, token), OpenAPI: []byte(`{"openapi":"3.1.0"}`),
		ErrInternal: answer.NewError(answer.StatusInternalServerError, answer.CodeInternal, "Internal error.", time.Second),
		CacheControls: map[answer.Group]string{answer.GroupNone: answer.NoStore, answer.GroupMarket: "public, max-age=30",
			answer.GroupSupply: "public, max-age=60", answer.GroupHolders: "public, max-age=300", answer.GroupStatic: "public, max-age=3600"}}
}

// state holds every fixture document, updated age before t0.
func state(t *testing.T, age time.Duration) *snapshot.State {
	t.Helper()
	st := &snapshot.State{Docs: map[contract.Domain]*snapshot.Doc{}, Rejected: map[contract.Domain]string{}}
	for _, d := range contract.Domains {
		env, err := contract.NewEnvelope(edgetest.Token().Mint, d, t0.Add(-age), edgetest.Source(d, false), edgetest.Doc(d))
		if err != nil {
			t.Fatal(err)
		}
		v, err := snapshot.Decode(env)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		st.Docs[d] = &snapshot.Doc{Env: env, Value: v, Expires: t0.Add(-age).Add(contract.DefaultTimings[d].TTL)}
	}
	return st
}

// TestRenderIsAFunctionOfItsInputs: the same state at the same instant
// renders byte-identical answers, variants included, whoever renders it
// and whatever view came before.
func TestRenderIsAFunctionOfItsInputs(t *testing.T) {
	in := inputs(t)
	a := in.Render(state(t, 30*time.Second), nil, t0)
	b := in.Render(state(t, 30*time.Second), nil, t0)
	c := in.Render(state(t, 30*time.Second), a, t0)
	for i := range a.Routes {
		x, y, z := a.Routes[i], b.Routes[i], c.Routes[i]
		if x == nil {
			continue // the portal, off here
		}
		path := RenderedRoutes[i].Path
		if x.Status != answer.StatusOK {
			t.Errorf("%s: status %d with every document: %s", path, x.Status, x.Body)
		}
		for _, o := range []*answer.Answer{y, z} {
			if !bytes.Equal(x.Body, o.Body) || x.ETag != o.ETag || !x.LastModified.Equal(o.LastModified) {
				t.Errorf("%s: two renders of one state differ: %q %q", path, x.ETag, o.ETag)
			}
			for k, v := range x.Variants {
				if v != nil && (o.Variants[k] == nil || !bytes.Equal(v.Body, o.Variants[k].Body)) {
					t.Errorf("%s: variant %d differs between two renders", path, k)
				}
			}
		}
	}
}

// TestNextChangeIsTheFirstBoundary: a view is due again when its first
// domain crosses its stale-after, and the render at that instant flips
// that domain's stale flag and nothing else's.
func TestNextChangeIsTheFirstBoundary(t *testing.T) {
	in := inputs(t)
	st := state(t, 30*time.Second)
	v := in.Render(st, nil, t0)
	first := time.Time{}
	for _, d := range contract.Domains {
		flip := st.Docs[d].Env.UpdatedAt.Add(contract.DefaultTimings[d].StaleAfter).Add(time.Millisecond)
		if first.IsZero() || flip.Before(first) {
			first = flip
		}
	}
	if !v.NextChange.Equal(first) {
		t.Fatalf("NextChange %s, want the first stale-after crossed, %s", v.NextChange, first)
	}
	before := in.Render(st, v, first.Add(-time.Millisecond))
	after := in.Render(snapshot.Expire(st, first), v, first)
	price := func(v *View) string { return string(v.Routes[rPrice].Body) }
	if !strings.Contains(price(before), `"stale":false`) || !strings.Contains(price(after), `"stale":true`) {
		t.Errorf("the market's stale flag at its boundary: before %s, after %s", price(before), price(after))
	}
	if !bytes.Equal(before.Routes[rTotalSupply].Body, after.Routes[rTotalSupply].Body) {
		t.Error("the supply's answer changed at the market's boundary")
	}
	if !after.Routes[rPrice].LastModified.After(before.Routes[rPrice].LastModified) &&
		after.Routes[rPrice].ETag != before.Routes[rPrice].ETag {
		t.Error("a changed price body kept its Last-Modified")
	}
}

// TestNoDocumentIsA503: without documents every data route is the
// contract's 503 data_unavailable with Retry-After; the static routes
// still answer from the token file.
func TestNoDocumentIsA503(t *testing.T) {
	in := inputs(t)
	v := in.Render(&snapshot.State{Docs: map[contract.Domain]*snapshot.Doc{}, Rejected: map[contract.Domain]string{}}, nil, t0)
	for _, i := range []int{rTotalSupply, rCirculatingSupply, rSupply, rCoinGeckoSupply, rPrice, rHolders, RouteMarketData} {
		a := v.Routes[i]
		if a.Status != answer.StatusServiceUnavailable || !bytes.Contains(a.Body, []byte(`"code":"data_unavailable"`)) {
			t.Errorf("%s: %d %s", RenderedRoutes[i].Path, a.Status, a.Body)
		}
		found := false
		for _, h := range a.Headers {
			found = found || (h.Key == "Retry-After" && h.Values[0] == "30")
		}
		if !found {
			t.Errorf("%s: a 503 without Retry-After: 30", RenderedRoutes[i].Path)
		}
	}
	if a := v.Routes[rMaxSupply]; a.Status != answer.StatusOK || string(a.Body) != "1000000000" {
		t.Errorf("max supply from the token file: %d %s", a.Status, a.Body)
	}
	if !v.NextChange.IsZero() {
		t.Errorf("a view without documents is due again at %s", v.NextChange)
	}
}
