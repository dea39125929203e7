package market

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// twoPairs is a market of two USDC pairs of the token at 0.5 USD: pairA
// (1,000 USD of liquidity, selected) and pairB (500).
func twoPairs() dexsim.Market {
	return dexsim.Market{Token: token, Pairs: []dexsim.Pair{
		pair(pairA, dexsim.Base, dexsim.USDC, "0.5", "0.5", 1000),
		pair(pairB, dexsim.Base, dexsim.USDC, "0.5", "0.5", 500),
	}}
}

func skew(h *harness, route, pct string, times int) {
	spec, err := fault.ParseSpec(route + "=skew:" + pct)
	if err != nil {
		h.t.Fatal(err)
	}
	spec.Fault.Times = times
	h.sim.Faults().Inject(spec.Route, spec.Fault)
}

func down(h *harness, route string) {
	spec, err := fault.ParseSpec(route + "=down")
	if err != nil {
		h.t.Fatal(err)
	}
	h.sim.Faults().Inject(spec.Route, spec.Fault)
}

func hasWarning(m contract.Market, code string) bool {
	return slices.ContainsFunc(m.Warnings, func(w contract.Warning) bool { return w.Code == code })
}

// check returns the document's cross-check, failing t when there is none.
func crossCheckOf(t *testing.T, m contract.Market) contract.PriceCheck {
	t.Helper()
	if m.CrossCheck == nil {
		t.Fatalf("the document carries no cross_check")
	}
	return *m.CrossCheck
}

func sourceOf(t *testing.T, c contract.PriceCheck, name string) contract.PriceSource {
	t.Helper()
	i := slices.IndexFunc(c.Sources, func(s contract.PriceSource) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no source %s in %+v", name, c.Sources)
	}
	return c.Sources[i]
}

// TestBothAggregatorsAgree: every poll reads both; the same price gives
// agreed, with both figures.
func TestBothAggregatorsAgree(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.SetMarket(mint, twoPairs())
	m := h.poll()
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceAgreed || c.Pair != pairA || c.Primary != contract.UpstreamDexScreener || c.Deviation == nil || !c.Deviation.IsZero() {
		t.Errorf("cross-check %+v", c)
	}
	for _, name := range []string{contract.UpstreamDexScreener, contract.UpstreamGeckoTerminal} {
		if s := sourceOf(t, c, name); s.State != contract.SourceOK || !eqDec(s.PriceUSD, "0.5") || s.SelectedPair != pairA {
			t.Errorf("source %+v", s)
		}
	}
	if hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Errorf("warnings %+v", m.Warnings)
	}
	if n := h.sim.Requests(dexsim.RouteGeckoTerminal); n != 1 {
		t.Errorf("GeckoTerminal asked %d times in a poll where DexScreener answered, want 1", n)
	}
	if got := testutil.ToFloat64(h.c.checkMetrics.verdict.WithLabelValues(contract.PriceAgreed)); got != 1 {
		t.Errorf("verdict gauge agreed = %v", got)
	}
}

// TestSourcesDisagreeBy5Percent: beyond the tolerance, within the hold
// bound, DexScreener's price is published with both figures, a warning
// and the verdict disagree.
func TestSourcesDisagreeBy5Percent(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.SetMarket(mint, twoPairs())
	skew(h, dexsim.RouteGeckoTerminal, "5%", 0)
	m := h.poll()
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceDisagree || c.Deviation == nil || !c.Deviation.Equal(dec("0.05")) {
		t.Fatalf("cross-check %+v", c)
	}
	if !eqDec(m.PriceUSD, "0.5") || !eqDec(sourceOf(t, c, contract.UpstreamGeckoTerminal).PriceUSD, "0.525") {
		t.Errorf("price %v, sources %+v", m.PriceUSD, c.Sources)
	}
	if !hasWarning(m, contract.WarnPriceSourcesDisagree) || !contract.PriceVerdictDegrades(c.Verdict) {
		t.Errorf("warnings %+v", m.Warnings)
	}
	if r := h.run(); !r.OK || !strings.Contains(r.Note, "disagree") {
		t.Errorf("run %+v", r)
	}
	if got := testutil.ToFloat64(h.c.checkMetrics.deviation); got != 0.05 {
		t.Errorf("deviation gauge %v", got)
	}

	// Agreed again: the warning goes.
	h.sim.Faults().ClearAll()
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceAgreed || hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Errorf("after the skew: %+v, warnings %+v", m.CrossCheck, m.Warnings)
	}
}

// TestSourcesDisagreeBy40PercentHolds: beyond the hold bound the last
// published document stays, dated as it was (so it turns stale when due),
// for price_max_held_polls polls; then DexScreener's price is published
// with the disagreement shown; agreement ends it.
func TestSourcesDisagreeBy40PercentHolds(t *testing.T) {
	held := 2
	h := newHarness(t, setup{token: func(t *config.Token) { t.PriceMaxHeldPolls = &held }})
	h.sim.SetMarket(mint, twoPairs())
	h.poll()
	first := h.envelope()

	h.sim.Reprice(mint, "0.505") // DexScreener +1 %; GeckoTerminal +41.4 %
	skew(h, dexsim.RouteGeckoTerminal, "40%", 0)
	for i := 1; i <= held; i++ {
		time.Sleep(2 * time.Millisecond)
		m := h.poll()
		c := crossCheckOf(t, m)
		if c.Verdict != contract.PriceHeld || c.HeldPolls != i || !hasWarning(m, contract.WarnPriceSourcesDisagree) {
			t.Fatalf("poll %d: cross-check %+v", i, c)
		}
		if !eqDec(m.PriceUSD, "0.5") {
			t.Errorf("poll %d: a held price became %v", i, m.PriceUSD)
		}
		if env := h.envelope(); !env.UpdatedAt.Equal(first.UpdatedAt) {
			t.Errorf("poll %d: a held document was dated %v, not %v", i, env.UpdatedAt, first.UpdatedAt)
		}
		if !eqDec(sourceOf(t, c, contract.UpstreamDexScreener).PriceUSD, "0.505") || !eqDec(sourceOf(t, c, contract.UpstreamGeckoTerminal).PriceUSD, "0.707") {
			t.Errorf("poll %d: sources %+v", i, c.Sources)
		}
	}
	m := h.poll() // the hold ran out
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceDisagree || c.HeldPolls != held+1 || !eqDec(m.PriceUSD, "0.505") || !hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Fatalf("after the hold: price %v, cross-check %+v", m.PriceUSD, c)
	}
	if env := h.envelope(); !env.UpdatedAt.After(first.UpdatedAt) {
		t.Error("the published document kept the held date")
	}
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceDisagree {
		t.Errorf("the disagreement went on, yet the price is held again: %+v", m.CrossCheck)
	}
	h.sim.Faults().ClearAll()
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceAgreed || crossCheckOf(t, m).HeldPolls != 0 || hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Errorf("agreed again: %+v", m.CrossCheck)
	}
}

// TestOneAggregatorDown: the other alone, marked single-source.
func TestOneAggregatorDown(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.SetMarket(mint, twoPairs())
	down(h, dexsim.RouteGeckoTerminal)
	m := h.poll()
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceSingleSource || !eqDec(m.PriceUSD, "0.5") || c.Deviation != nil {
		t.Fatalf("price %v, cross-check %+v", m.PriceUSD, c)
	}
	if s := sourceOf(t, c, contract.UpstreamGeckoTerminal); s.State != contract.SourceDown || s.ErrorKind != contract.ErrKindUnavailable {
		t.Errorf("geckoterminal %+v", s)
	}
	if r := h.run(); !r.OK || r.Upstream != contract.UpstreamDexScreener {
		t.Errorf("run %+v", r)
	}
	if got := testutil.ToFloat64(h.c.checkMetrics.state.WithLabelValues(contract.UpstreamGeckoTerminal, contract.SourceDown)); got != 1 {
		t.Errorf("state gauge %v", got)
	}
}

// TestJumpSeenByOneAggregatorWaits: a move beyond price_move_bound that
// one aggregator sees waits for the next poll; a spike gone by then is
// never published.
func TestJumpSeenByOneAggregatorWaits(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.SetMarket(mint, twoPairs())
	h.poll()
	down(h, dexsim.RouteGeckoTerminal)

	// A one-poll spike: held, then gone.
	skew(h, dexsim.RouteDexScreener, "200%", 1)
	m := h.poll()
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceUnconfirmed || c.Pending == nil || c.Pending.Kind != contract.PendingPriceMove || !c.Pending.PriceUSD.Equal(dec("1.5")) {
		t.Fatalf("spike: cross-check %+v", c)
	}
	if !eqDec(m.PriceUSD, "0.5") {
		t.Fatalf("a move seen by one aggregator was published: %v", m.PriceUSD)
	}
	m = h.poll()
	if c := crossCheckOf(t, m); c.Verdict != contract.PriceSingleSource || c.Pending != nil || !eqDec(m.PriceUSD, "0.5") {
		t.Fatalf("after the spike: price %v, cross-check %+v", m.PriceUSD, c)
	}

	// A real move: the next poll confirms it.
	h.sim.Reprice(mint, "1.5")
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceUnconfirmed || !eqDec(m.PriceUSD, "0.5") {
		t.Fatalf("first sight: price %v, %+v", m.PriceUSD, m.CrossCheck)
	}
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceSingleSource || !eqDec(m.PriceUSD, "1.5") {
		t.Fatalf("confirmed by the next poll: price %v, %+v", m.PriceUSD, m.CrossCheck)
	}
}

// TestJumpSeenByBothIsPublishedAtOnce, and one the other aggregator does
// not see (within a wide hold bound) waits.
func TestJumpSeenByBothIsPublishedAtOnce(t *testing.T) {
	h := newHarness(t, setup{token: func(t *config.Token) { t.PriceHoldBound = "10" }})
	h.sim.SetMarket(mint, twoPairs())
	h.poll()
	h.sim.Reprice(mint, "1.5")
	if m := h.poll(); crossCheckOf(t, m).Verdict != contract.PriceAgreed || !eqDec(m.PriceUSD, "1.5") {
		t.Fatalf("a move both see: price %v, %+v", m.PriceUSD, m.CrossCheck)
	}
	skew(h, dexsim.RouteDexScreener, "-70%", 1) // 1.5 → 0.45 at DexScreener only
	m := h.poll()
	if c := crossCheckOf(t, m); c.Verdict != contract.PriceUnconfirmed || !eqDec(m.PriceUSD, "1.5") || !strings.Contains(c.Reason, "geckoterminal does not confirm") {
		t.Fatalf("a fall only DexScreener sees: price %v, %+v", m.PriceUSD, c)
	}
}

// TestPairChangeNeedsASecondWitness: a new selected pair that both see is
// published at once; one that only one sees waits for the next poll.
func TestPairChangeNeedsASecondWitness(t *testing.T) {
	h := newHarness(t, setup{})
	h.sim.SetMarket(mint, twoPairs())
	h.poll()
	deeper := pair(pairB, dexsim.Base, dexsim.USDC, "0.5", "0.5", 5000)
	h.sim.SetPair(mint, deeper)
	if m := h.poll(); m.Selected.Address != pairB || crossCheckOf(t, m).Verdict != contract.PriceAgreed {
		t.Fatalf("a change both see: selected %s, %+v", m.Selected.Address, m.CrossCheck)
	}

	down(h, dexsim.RouteGeckoTerminal)
	h.sim.SetPair(mint, pair(pairA, dexsim.Base, dexsim.USDC, "0.5", "0.5", 9000))
	m := h.poll()
	c := crossCheckOf(t, m)
	if m.Selected.Address != pairB || c.Verdict != contract.PriceUnconfirmed || c.Pending == nil || c.Pending.Kind != contract.PendingPairChange || c.Pending.Pair != pairA {
		t.Fatalf("a change one sees: selected %s, %+v", m.Selected.Address, c)
	}
	if m := h.poll(); m.Selected.Address != pairA || crossCheckOf(t, m).Verdict != contract.PriceSingleSource {
		t.Fatalf("confirmed by the next poll: selected %s, %+v", m.Selected.Address, m.CrossCheck)
	}
}

// TestDisagreementStaysVisibleWhileAMoveIsPending: a move only DexScreener
// sees, while the aggregators disagree within the hold bound, is held as
// unconfirmed, and the disagreement stays visible: the warning, the
// deviation and both figures in the reason.
func TestDisagreementStaysVisibleWhileAMoveIsPending(t *testing.T) {
	h := newHarness(t, setup{token: func(t *config.Token) { t.PriceMoveBound = "0.1" }})
	h.sim.SetMarket(mint, twoPairs())
	h.poll()
	h.sim.Reprice(mint, "0.6")                    // +20 %: beyond the 10 % move bound
	skew(h, dexsim.RouteGeckoTerminal, "-10%", 0) // GeckoTerminal 0.54: +8 %, 10 % below DexScreener
	m := h.poll()
	c := crossCheckOf(t, m)
	if c.Verdict != contract.PriceUnconfirmed || c.Pending == nil || !c.Pending.PriceUSD.Equal(dec("0.6")) || !eqDec(m.PriceUSD, "0.5") {
		t.Fatalf("price %v, cross-check %+v", m.PriceUSD, c)
	}
	if c.Deviation == nil || !c.Deviation.Equal(dec("0.1")) {
		t.Errorf("deviation %v", c.Deviation)
	}
	if !hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Errorf("the sources disagree but the warning is gone: %+v", m.Warnings)
	}
	for _, want := range []string{"does not confirm", "disagree", "0.54", "10%", "2% tolerance"} {
		if !strings.Contains(c.Reason, want) {
			t.Errorf("reason %q lacks %q", c.Reason, want)
		}
	}

	// The next poll confirms the move: published, still disagree.
	m = h.poll()
	if c := crossCheckOf(t, m); c.Verdict != contract.PriceDisagree || !eqDec(m.PriceUSD, "0.6") || !hasWarning(m, contract.WarnPriceSourcesDisagree) {
		t.Fatalf("confirmed: price %v, %+v, warnings %+v", m.PriceUSD, c, m.Warnings)
	}
}
