package market

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// The cross-check of the price between the two aggregators (issue
// "cross-checked official numbers"; docs/decisions.md, Market
// cross-check). Every poll reads both; judge compares the primary's price
// of its selected pair with the secondary's price of the same pool, and
// decides whether the primary's document is published or the last one
// held:
//
//   - deviation = |secondary − primary| / primary, exact decimals;
//   - within the tolerance: agreed; beyond it, up to the hold bound:
//     disagree (published, both figures shown, warning, degraded); beyond
//     the hold bound: held, for at most MaxHeldPolls consecutive polls,
//     then disagree (the primary's figure published);
//   - a move beyond the move bound since the last published price, or a
//     change of the selected pair, needs a second witness: the other
//     aggregator (its price moved beyond the bound the same way, or it
//     selects the same new pair) or the previous poll (the same pending
//     change); until then the last document is held, unconfirmed. A
//     disagreement beyond the tolerance stays visible meanwhile: the
//     reason says it and the price_sources_disagree warning stays
//     (contract.PriceSourcesDisagree).

// source is one aggregator's outcome in a poll.
type source struct {
	name    string
	doc     *contract.Market // nil when it failed or was not read
	err     error
	notRead bool
}

// view is the aggregator as the cross-check shows it, and its price of
// pair (nil when it has none).
func (s source) view(pair string) (contract.PriceSource, *decimal.Decimal) {
	ps := contract.PriceSource{Name: s.name}
	switch {
	case s.notRead:
		ps.State = contract.SourceNotRead
		return ps, nil
	case s.doc == nil:
		ps.State = contract.SourceDown
		if s.err != nil {
			ps.ErrorKind = collector.Classify(s.err).Kind
		}
		return ps, nil
	}
	if s.doc.Selected != nil {
		ps.SelectedPair = s.doc.Selected.Address
	}
	ps.State = contract.SourceNoPair
	for i := range s.doc.Pairs {
		if p := &s.doc.Pairs[i]; p.Address == pair && pair != "" && p.Usable && p.PriceUSD != nil {
			ps.State, ps.PriceUSD = contract.SourceOK, p.PriceUSD
			return ps, p.PriceUSD
		}
	}
	return ps, nil
}

// shareDigits is the precision of a deviation: a share to 12 decimal
// places (a millionth of a percent is far below any tolerance).
const shareDigits = 12

// relative is |a − b| / b, rounded to shareDigits places.
func relative(a, b decimal.Decimal) decimal.Decimal {
	return a.Sub(b).Abs().DivRound(b, shareDigits)
}

func pct(share decimal.Decimal) string {
	return share.Mul(decimal.NewFromInt(100)).Round(2).String() + "%"
}

// judge cross-checks the primary's price with the secondary and says
// whether the last published document (prev) is held instead.
func (c *Collector) judge(primary, secondary source, prev *published, now time.Time) (contract.PriceCheck, bool) {
	b := c.bounds
	chk := contract.PriceCheck{Primary: primary.name, Tolerance: b.Tolerance, HoldBound: b.HoldBound,
		MoveBound: b.MoveBound, MaxHeldPolls: b.MaxHeldPolls, CheckedAt: now.UTC()}
	p := primary.doc
	if p.Status == contract.MarketOK && p.Selected != nil {
		chk.Pair = p.Selected.Address
	}
	pv, _ := primary.view(chk.Pair)
	sv, p2 := secondary.view(chk.Pair)
	chk.Sources = []contract.PriceSource{pv, sv}
	if primary.name != contract.UpstreamDexScreener {
		chk.Sources = []contract.PriceSource{sv, pv}
	}
	if chk.Pair == "" {
		chk.Verdict, chk.Primary = contract.PriceNotPriced, ""
		chk.Reason = fmt.Sprintf("%s lists no usable pair: there is no price to compare.", primary.name)
		return chk, false
	}
	j := judgement{primary: primary, secondary: secondary, sv: sv, p1: *p.PriceUSD, p2: p2}
	if prev != nil && prev.doc.Status == contract.MarketOK && prev.doc.PriceUSD != nil && prev.doc.PriceUSD.Sign() > 0 {
		j.prevDoc, j.prevCheck = &prev.doc, prev.doc.CrossCheck
	}

	// Rule 4: the two aggregators' prices of the pair.
	held, expired, disagreement := c.comparePrices(&chk, j)
	if held {
		return chk, true
	}

	// Rule 5: a jump or a new pair needs a second witness. A price whose
	// hold ran out has had its witnesses.
	if j.prevDoc == nil || expired {
		return chk, false
	}
	return chk, c.awaitWitness(&chk, j, disagreement, now)
}

// judgement is what judge's rules 4 and 5 read: the two aggregators, the
// secondary as the check shows it (sv), their prices of the primary's
// selected pair (p1, and p2: nil when the secondary has none), and the
// last published document with a positive price and its check (nil when
// there is none).
type judgement struct {
	primary, secondary source
	sv                 contract.PriceSource
	p1                 decimal.Decimal
	p2                 *decimal.Decimal
	prevDoc            *contract.Market
	prevCheck          *contract.PriceCheck
}

// comparePrices is judge's rule 4: it sets chk's verdict, reason,
// deviation and held polls from the two aggregators' prices of the pair.
// held says that the last published document is held (beyond the hold
// bound), expired that the hold ran out, and disagreement is what the
// aggregators' disagreement within the hold bound is, for a pending
// change ("" when they agree).
func (c *Collector) comparePrices(chk *contract.PriceCheck, j judgement) (held, expired bool, disagreement string) {
	b := c.bounds
	primary, secondary, p1, p2, prevCheck := j.primary, j.secondary, j.p1, j.p2, j.prevCheck
	if p2 == nil {
		chk.Verdict = contract.PriceSingleSource
		chk.Reason = fmt.Sprintf("Only %s prices pair %s (%s: %s); the price is not cross-checked.", primary.name, chk.Pair, secondary.name, j.sv.State)
		return false, false, ""
	}
	dev := relative(*p2, p1)
	chk.Deviation = &dev
	versus := fmt.Sprintf("%s prices pair %s at %s USD, %s from %s's %s USD", secondary.name, chk.Pair, p2.String(), pct(dev), primary.name, p1.String())
	switch {
	case dev.LessThanOrEqual(b.Tolerance):
		chk.Verdict = contract.PriceAgreed
		chk.Reason = fmt.Sprintf("Both aggregators price pair %s within the %s tolerance (%s apart).", chk.Pair, pct(b.Tolerance), pct(dev))
	case dev.LessThanOrEqual(b.HoldBound):
		chk.Verdict = contract.PriceDisagree
		chk.Reason = fmt.Sprintf("The aggregators disagree: %s, beyond the %s tolerance; %s's figures are published.", versus, pct(b.Tolerance), primary.name)
		disagreement = fmt.Sprintf(" The aggregators also disagree: %s, beyond the %s tolerance.", versus, pct(b.Tolerance))
	default:
		chk.HeldPolls = 1
		if prevCheck != nil && prevCheck.HeldPolls > 0 {
			chk.HeldPolls = prevCheck.HeldPolls + 1
		}
		if j.prevDoc != nil && chk.HeldPolls <= b.MaxHeldPolls {
			chk.Verdict = contract.PriceHeld
			chk.Reason = fmt.Sprintf("The aggregators disagree: %s, beyond the %s hold bound; the last published price is held (poll %d of at most %d).",
				versus, pct(b.HoldBound), chk.HeldPolls, b.MaxHeldPolls)
			return true, false, ""
		}
		expired = true
		chk.Verdict = contract.PriceDisagree
		chk.Reason = fmt.Sprintf("The aggregators disagree: %s, beyond the %s hold bound for %d polls (at most %d held); %s's figures are published.",
			versus, pct(b.HoldBound), chk.HeldPolls, b.MaxHeldPolls, primary.name)
	}
	return false, expired, disagreement
}

// awaitWitness is judge's rule 5, for a price that has a previous one
// (j.prevDoc) and no hold that ran out: a move beyond the move bound, or
// a change of the selected pair, is confirmed by the other aggregator or
// by the previous poll's pending change; unconfirmed, it makes chk say
// so and reports that the last document is held.
func (c *Collector) awaitWitness(chk *contract.PriceCheck, j judgement, disagreement string, now time.Time) bool {
	b := c.bounds
	primary, secondary, sv, p1, p2, prevDoc := j.primary, j.secondary, j.sv, j.p1, j.p2, j.prevDoc
	old := *prevDoc.PriceUSD
	kind := ""
	switch {
	case prevDoc.Selected != nil && prevDoc.Selected.Address != chk.Pair:
		kind = contract.PendingPairChange
	case relative(p1, old).GreaterThan(b.MoveBound):
		kind = contract.PendingPriceMove
	default:
		return false
	}
	jumps := func(x decimal.Decimal) bool {
		return relative(x, old).GreaterThan(b.MoveBound) && x.Cmp(old) == p1.Cmp(old)
	}
	var otherSaw, pollSaw bool
	if kind == contract.PendingPairChange {
		otherSaw = sv.SelectedPair == chk.Pair
	} else {
		otherSaw = p2 != nil && jumps(*p2)
	}
	if pend := pendingOf(j.prevCheck); pend != nil && pend.Kind == kind && pend.Pair == chk.Pair {
		pollSaw = kind == contract.PendingPairChange || jumps(pend.PriceUSD)
	}
	if otherSaw || pollSaw {
		return false
	}
	chk.Verdict = contract.PriceUnconfirmed
	chk.Pending = &contract.PendingPrice{Kind: kind, Pair: chk.Pair, PriceUSD: p1, Source: primary.name, Since: now.UTC()}
	what := fmt.Sprintf("a move of %s (%s to %s USD)", pct(relative(p1, old)), old.String(), p1.String())
	if kind == contract.PendingPairChange {
		what = fmt.Sprintf("a change of the selected pair from %s to %s (%s USD)", prevDoc.Selected.Address, chk.Pair, p1.String())
	}
	// A disagreement within the hold bound stays visible while the change
	// waits: the verdict says what is published (the last price, held),
	// the reason says both, and price_sources_disagree stays
	// (contract.PriceSourcesDisagree: deviation beyond the tolerance).
	chk.Reason = fmt.Sprintf("%s sees %s that %s does not confirm; the last published price is held until the next poll confirms it.%s",
		primary.name, what, secondary.name, disagreement)
	return true
}

// fitHolds lowers b.MaxHeldPolls so that a price held that many polls,
// and the poll that then publishes, stay within the market TTL: a held
// document keeps its updated_at, and its key expires TTL after it.
// capped reports a lowered value.
func fitHolds(b config.PriceBounds, timing contract.Timing) (_ config.PriceBounds, capped bool) {
	if timing.Refresh <= 0 {
		return b, false
	}
	fit := max(int(timing.TTL/timing.Refresh)-2, 0) // (fit+1) × refresh < TTL
	if b.MaxHeldPolls > fit {
		b.MaxHeldPolls = fit
		return b, true
	}
	return b, false
}

// pendingOf returns c's pending change (nil when c is nil or has none).
func pendingOf(c *contract.PriceCheck) *contract.PendingPrice {
	if c == nil {
		return nil
	}
	return c.Pending
}

// checkMetrics are the cross-check's series. Labels are names of this
// code: a verdict, an aggregator, a state.
type checkMetrics struct {
	verdict   *prometheus.GaugeVec
	checks    *prometheus.CounterVec
	state     *prometheus.GaugeVec
	deviation prometheus.Gauge
}

var sourceStates = []string{contract.SourceOK, contract.SourceDown, contract.SourceNoPair, contract.SourceNotRead}

func newCheckMetrics(f promauto.Factory) checkMetrics {
	m := checkMetrics{
		verdict: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "market_price_verdict",
			Help: "1 for the verdict of the last price cross-check between the aggregators (agreed, disagree, held, unconfirmed, single_source, not_priced), 0 for the others."},
			[]string{"verdict"}),
		checks: f.NewCounterVec(prometheus.CounterOpts{Namespace: ops.Namespace, Name: "market_price_checks_total",
			Help: "Price cross-checks by verdict."}, []string{"verdict"}),
		state: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "market_price_source_state",
			Help: "1 for each aggregator's state in the last cross-check (ok, down, no_pair, not_read), 0 for the others."},
			[]string{"aggregator", "state"}),
		deviation: f.NewGauge(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "market_price_deviation_ratio",
			Help: "|GeckoTerminal − DexScreener| / DexScreener of the selected pair's price in the last cross-check (0 when only one price exists)."}),
	}
	for _, v := range contract.PriceVerdicts {
		m.checks.WithLabelValues(v)
		m.verdict.WithLabelValues(v).Set(0)
	}
	return m
}

// observeCheck sets the cross-check's series.
func (c *Collector) observeCheck(chk contract.PriceCheck) {
	m := c.checkMetrics
	for _, v := range contract.PriceVerdicts {
		m.verdict.WithLabelValues(v).Set(boolFloat(v == chk.Verdict))
	}
	m.checks.WithLabelValues(chk.Verdict).Inc()
	for _, s := range chk.Sources {
		for _, st := range sourceStates {
			m.state.WithLabelValues(s.Name, st).Set(boolFloat(st == s.State))
		}
	}
	dev := 0.0
	if chk.Deviation != nil {
		dev = chk.Deviation.InexactFloat64()
	}
	m.deviation.Set(dev)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
