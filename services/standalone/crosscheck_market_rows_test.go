package standalone_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// The rows of the fault matrix for the price cross-check (issue 27, rules
// 4 and 5): the standalone service, in process, over the demo simulator;
// the market collector polls every second and reads GeckoTerminal on
// every poll (MARKET_GECKOTERMINAL_RPM 120, so that no poll finds the
// budget spent); one aggregator is given a fault. Throughout, every
// answer of /api/price is read: the price published must be DexScreener's
// (the primary's) figure, never the skewed one, and never a price the two
// do not agree on shown as agreed.

// marketRefresh is the market poll of these rows.
const marketRefresh = time.Second

// marketRows is a running standalone whose market these rows read.
type marketRows struct {
	api string
	dex *dexsim.Server
}

// startMarket starts standalone with the simulator and waits for an
// agreed price. The token file's bounds are the defaults: tolerance 2 %,
// hold bound 20 %, 5 held polls at most.
func startMarket(t *testing.T, seed uint64) *marketRows {
	t.Helper()
	t.Setenv("MARKET_GECKOTERMINAL_RPM", "120")
	r := start(t, simulator.Options{Seed: seed, Accounts: 200}, func(c *config.Common) {
		c.Market = config.DomainTiming{Refresh: marketRefresh, StaleAfter: 15 * marketRefresh, TTL: time.Minute}
	})
	m := &marketRows{api: r.info.API, dex: r.info.Sim.Dex}
	waitFor(t, m.api, "/api/price")
	m.waitPrice(t, 10*time.Second, func(p priceSeen) bool { return p.verdict() == contract.PriceAgreed })
	p := m.price(t)
	c := p.CrossCheck
	if c.Tolerance.String() != "0.02" || c.HoldBound.String() != "0.2" || c.MaxHeldPolls != 5 {
		t.Fatalf("bounds: tolerance %s, hold bound %s, %d held polls; want the defaults", c.Tolerance, c.HoldBound, c.MaxHeldPolls)
	}
	return m
}

// priceSeen is one read of /api/price.
type priceSeen struct {
	PriceUSD   json.Number `json:"price_usd"`
	UpdatedAt  string      `json:"updated_at"`
	Stale      bool        `json:"stale"`
	CrossCheck *struct {
		Verdict      string       `json:"verdict"`
		Deviation    *json.Number `json:"deviation"`
		Tolerance    json.Number  `json:"tolerance"`
		HoldBound    json.Number  `json:"hold_bound"`
		HeldPolls    int          `json:"held_polls"`
		MaxHeldPolls int          `json:"max_held_polls"`
		Reason       string       `json:"reason"`
		Sources      []struct {
			Name     string       `json:"name"`
			State    string       `json:"state"`
			PriceUSD *json.Number `json:"price_usd"`
		} `json:"sources"`
	} `json:"cross_check"`
}

func (p priceSeen) verdict() string {
	if p.CrossCheck == nil {
		return ""
	}
	return p.CrossCheck.Verdict
}

// source is name's state and price ("" when it has none).
func (p priceSeen) source(name string) (state, price string) {
	for _, s := range p.CrossCheck.Sources {
		if s.Name == name {
			if s.PriceUSD != nil {
				price = s.PriceUSD.String()
			}
			return s.State, price
		}
	}
	return "", ""
}

func (p priceSeen) deviation() string {
	if p.CrossCheck.Deviation == nil {
		return ""
	}
	return p.CrossCheck.Deviation.String()
}

func (m *marketRows) price(t *testing.T) priceSeen {
	t.Helper()
	resp, body := get(t, m.api+"/api/price")
	var p priceSeen
	if err := json.Unmarshal(body, &p); resp.StatusCode != http.StatusOK || err != nil || p.CrossCheck == nil {
		t.Fatalf("/api/price: %d %v: %s", resp.StatusCode, err, body)
	}
	return p
}

// warned reports whether /api/market-data carries price_sources_disagree.
func (m *marketRows) warned(t *testing.T) bool {
	t.Helper()
	resp, body := get(t, m.api+"/api/market-data")
	var b struct {
		Warnings []contract.Warning `json:"warnings"`
	}
	if err := json.Unmarshal(body, &b); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/api/market-data: %d %v: %s", resp.StatusCode, err, body)
	}
	for _, w := range b.Warnings {
		if w.Code == contract.WarnPriceSourcesDisagree {
			return true
		}
	}
	return false
}

// priceProblem is /api/status's problem of the price cross-check ("" when
// there is none).
func priceProblem(s statusReport) string {
	for _, p := range s.Problems {
		if strings.HasPrefix(p, "market: price cross-check ") {
			return p
		}
	}
	return ""
}

// waitPrice waits up to d for /api/price to meet ok and returns how long
// it took.
func (m *marketRows) waitPrice(t *testing.T, d time.Duration, ok func(priceSeen) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		p := m.price(t)
		if ok(p) {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s on, /api/price: %s %+v", d, p.PriceUSD, *p.CrossCheck)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// skewTo is a price multiplied by 1 + pct/100, as the simulator skews it.
func skewTo(t *testing.T, price json.Number, pct int64) string {
	t.Helper()
	d, err := decimal.NewFromString(price.String())
	if err != nil {
		t.Fatal(err)
	}
	return d.Mul(decimal.NewFromInt(100 + pct)).Div(decimal.NewFromInt(100)).String()
}

func inject(t *testing.T, dex *dexsim.Server, spec string) {
	t.Helper()
	s, err := fault.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	dex.Faults().Inject(s.Route, s.Fault)
}

// recoverAgreed clears the faults and returns how long /api/price takes
// to say agreed again at truth, with no price problem in /api/status and
// no warning.
func (m *marketRows) recoverAgreed(t *testing.T, truth json.Number, bound time.Duration) time.Duration {
	t.Helper()
	m.dex.Faults().ClearAll()
	cleared := time.Now()
	for {
		p := m.price(t)
		if p.verdict() == contract.PriceAgreed {
			took := time.Since(cleared)
			if p.PriceUSD != truth {
				t.Fatalf("agreed again at %s, want %s", p.PriceUSD, truth)
			}
			if s := readStatus(t, m.api); priceProblem(s) != "" {
				t.Errorf("/api/status once agreed: %q", s.Problems)
			}
			if m.warned(t) {
				t.Errorf("price_sources_disagree once agreed")
			}
			return took
		}
		if time.Since(cleared) > bound {
			t.Fatalf("%s after the fault was cleared, /api/price: %s %+v", bound, p.PriceUSD, *p.CrossCheck)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAggregatorsDisagreeBy5Percent is a row of the fault matrix:
// GeckoTerminal prices the token 5 % above DexScreener: beyond the 2 %
// tolerance, within the 20 % hold bound.
func TestAggregatorsDisagreeBy5Percent(t *testing.T) {
	m := startMarket(t, 61)
	truth := m.price(t).PriceUSD
	skewed := skewTo(t, truth, 5)
	inject(t, m.dex, dexsim.RouteGeckoTerminal+"=skew:5%")
	injected := time.Now()
	m.waitPrice(t, 3*marketRefresh, func(p priceSeen) bool { return p.verdict() == contract.PriceDisagree })
	seenAfter := time.Since(injected)

	reads, statuses := 0, map[string]int{}
	var problem string
	for end := time.Now().Add(4 * marketRefresh); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		p := m.price(t)
		reads++
		_, gt := p.source(contract.UpstreamGeckoTerminal)
		_, ds := p.source(contract.UpstreamDexScreener)
		if p.PriceUSD != truth || p.verdict() != contract.PriceDisagree || ds != truth.String() || gt != skewed || p.deviation() != "0.05" {
			t.Fatalf("read %d: price %s, verdict %s, dexscreener %s, geckoterminal %s, deviation %s; want %s disagree, %s and %s, 0.05",
				reads, p.PriceUSD, p.verdict(), ds, gt, p.deviation(), truth, truth, skewed)
		}
		if !m.warned(t) {
			t.Fatalf("read %d: no price_sources_disagree in /api/market-data", reads)
		}
		s := readStatus(t, m.api)
		statuses[s.Status]++
		if problem = priceProblem(s); s.Status != "degraded" || !strings.HasPrefix(problem, "market: price cross-check disagree (") {
			t.Fatalf("/api/status during the skew: %s %q", s.Status, s.Problems)
		}
	}

	bound := 2*marketRefresh + 3*time.Second // a poll under -race on a busy machine takes longer than its interval
	recovery := m.recoverAgreed(t, truth, bound)
	recordRow(t, matrixRow{Order: 13, Fault: "the aggregators disagree by 5 % (GeckoTerminal skewed +5 %: beyond the 2 % tolerance, within the 20 % hold bound; polls of 1 s)",
		During: fmt.Sprintf("200, DexScreener's price %s USD in every answer (%d reads), never GeckoTerminal's %s; `cross_check` `disagree`, both figures, deviation 0.05; `price_sources_disagree` in `/api/market-data`; seen %s after the fault began",
			truth, reads, skewed, roundDuration(seenAfter)),
		Status:   fmt.Sprintf("%s; `%s`", counts(statuses), problem),
		Recovery: recovery, Bound: bound})
}

// TestAggregatorsDisagreeBy40Percent is a row of the fault matrix:
// GeckoTerminal prices the token 40 % above DexScreener, beyond the 20 %
// hold bound: the last published price is held (its updated_at kept) for
// at most price_max_held_polls (5) polls, then DexScreener's figure is
// published, the disagreement still shown.
func TestAggregatorsDisagreeBy40Percent(t *testing.T) {
	m := startMarket(t, 62)
	before := m.price(t)
	truth := before.PriceUSD
	skewed := skewTo(t, truth, 40)
	inject(t, m.dex, dexsim.RouteGeckoTerminal+"=skew:40%")
	injected := time.Now()

	reads, skewedReads, statuses := 0, 0, map[string]int{}
	maxHeld, lastHeld, limit := 0, 0, 0
	var heldFor, published time.Duration
	var problem, firstHeldAt string
	// Five held polls, the publication and two polls after it take eight
	// polls; a poll under -race on a busy machine takes longer than its
	// interval (a fresh-clone run saw nine held polls' worth in 10 s), so
	// the wait is bounded at 30 polls, and the hold is counted in polls.
	for end := time.Now().Add(30 * marketRefresh); ; time.Sleep(20 * time.Millisecond) {
		p := m.price(t)
		reads++
		c := p.CrossCheck
		_, gt := p.source(contract.UpstreamGeckoTerminal)
		if p.PriceUSD != truth {
			t.Fatalf("read %d: price %s published (verdict %s), want DexScreener's %s", reads, p.PriceUSD, c.Verdict, truth)
		}
		switch c.Verdict {
		case contract.PriceAgreed: // the poll before the skew
			if published > 0 || maxHeld > 0 || gt != truth.String() {
				t.Fatalf("read %d: agreed with geckoterminal at %s after the skew was seen", reads, gt)
			}
		case contract.PriceHeld:
			if published > 0 || c.HeldPolls < lastHeld || c.HeldPolls < 1 || c.HeldPolls > c.MaxHeldPolls || gt != skewed || p.deviation() != "0.4" {
				t.Fatalf("read %d: held poll %d of %d after %d, geckoterminal %s, deviation %s", reads, c.HeldPolls, c.MaxHeldPolls, lastHeld, gt, p.deviation())
			}
			// The price held is the last one published before the skew: the
			// one read before it was injected, or one a poll that read both
			// aggregators before it published since (its updated_at within a
			// poll of the injection); every held answer keeps it.
			at, err := time.Parse(time.RFC3339Nano, p.UpdatedAt)
			if err != nil {
				t.Fatalf("read %d: updated_at %q: %v", reads, p.UpdatedAt, err)
			}
			if p.UpdatedAt < before.UpdatedAt || at.After(injected.Add(marketRefresh)) || (firstHeldAt != "" && p.UpdatedAt != firstHeldAt) {
				t.Fatalf("read %d: a held price with updated_at %s, want the last published before the skew (%s, or one published within a poll of the skew at %s; first held %q)",
					reads, p.UpdatedAt, before.UpdatedAt, injected.Format(time.StampMilli), firstHeldAt)
			}
			if maxHeld == 0 {
				heldFor, firstHeldAt = time.Since(injected), p.UpdatedAt
			}
			lastHeld, maxHeld = c.HeldPolls, max(maxHeld, c.HeldPolls)
		case contract.PriceDisagree:
			// Every held poll is not necessarily read: a read of three
			// paths under -race on a busy machine can outlast a poll, so
			// the count is the proof: held_polls past max_held_polls, and
			// at least one held answer seen before.
			if maxHeld < 1 || maxHeld > c.MaxHeldPolls || c.HeldPolls <= c.MaxHeldPolls || gt != skewed || p.deviation() != "0.4" {
				t.Fatalf("read %d: disagree after %d held polls (held_polls %d), geckoterminal %s, deviation %s", reads, maxHeld, c.HeldPolls, gt, p.deviation())
			}
			if published == 0 {
				published, limit = time.Since(injected), c.MaxHeldPolls
			}
		default:
			t.Fatalf("read %d: verdict %s during the skew", reads, c.Verdict)
		}
		if c.Verdict != contract.PriceAgreed {
			skewedReads++
			if !m.warned(t) {
				t.Fatalf("read %d: %s without price_sources_disagree in /api/market-data", reads, c.Verdict)
			}
			s := readStatus(t, m.api)
			statuses[s.Status]++
			problem = priceProblem(s)
			// Status is read after the price: a poll between the two may
			// have ended the hold (held, then disagree; never back).
			seen := strings.HasPrefix(problem, "market: price cross-check "+c.Verdict+" (") ||
				(c.Verdict == contract.PriceHeld && strings.HasPrefix(problem, "market: price cross-check "+contract.PriceDisagree+" ("))
			if s.Status != "degraded" || !seen {
				t.Fatalf("/api/status during the skew (%s): %s %q", c.Verdict, s.Status, s.Problems)
			}
		}
		if published > 0 && time.Since(injected) > published+2*marketRefresh {
			if p.UpdatedAt == firstHeldAt {
				t.Fatalf("DexScreener's figure published after the hold with the held updated_at %s", p.UpdatedAt)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%s into the skew: verdict %s, held polls %d", 30*marketRefresh, c.Verdict, c.HeldPolls)
		}
	}
	// Five held polls, then the sixth publishes: counted in polls (the
	// disagree case above requires held_polls past max_held_polls and a
	// held answer seen before it); the time it took is recorded, not bounded (a
	// poll under -race on a busy machine takes longer than its interval).
	if maxHeld == 0 || published == 0 {
		t.Fatalf("held polls %d, published after %s: the hold was not seen end to end", maxHeld, published)
	}

	bound := 2*marketRefresh + 3*time.Second // a poll under -race on a busy machine takes longer than its interval
	recovery := m.recoverAgreed(t, truth, bound)
	recordRow(t, matrixRow{Order: 14, Fault: "the aggregators disagree by 40 % (GeckoTerminal skewed +40 %: beyond the 20 % hold bound; polls of 1 s, at most 5 held)",
		During: fmt.Sprintf("200, never GeckoTerminal's %s: `cross_check` `held` (the last published %s USD, its `updated_at` kept, polls 1 to %d, first seen %s after the fault began), then from %s on DexScreener's %s USD published afresh, `disagree`, both figures, deviation 0.4; `price_sources_disagree` throughout (%d reads)",
			skewed, truth, limit, roundDuration(heldFor), roundDuration(published), truth, skewedReads),
		Status:   fmt.Sprintf("%s; `%s`", counts(statuses), problem),
		Recovery: recovery, Bound: bound})
}

// TestAggregatorDown is a row of the fault matrix: GeckoTerminal is down
// (every connection reset): DexScreener's price alone, single_source,
// which does not make /api/status degraded by itself (docs/decisions.md).
func TestAggregatorDown(t *testing.T) {
	m := startMarket(t, 63)
	truth := m.price(t).PriceUSD
	inject(t, m.dex, dexsim.RouteGeckoTerminal+"=down")
	injected := time.Now()
	m.waitPrice(t, 3*marketRefresh, func(p priceSeen) bool { return p.verdict() == contract.PriceSingleSource })
	seenAfter := time.Since(injected)

	reads, statuses := 0, map[string]int{}
	var agg upstreamReport
	for end := time.Now().Add(4 * marketRefresh); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		p := m.price(t)
		reads++
		state, gt := p.source(contract.UpstreamGeckoTerminal)
		if p.PriceUSD != truth || p.verdict() != contract.PriceSingleSource || state != contract.SourceDown || gt != "" || p.CrossCheck.Deviation != nil {
			t.Fatalf("read %d: price %s, verdict %s, geckoterminal %s %s; want %s single_source, geckoterminal down", reads, p.PriceUSD, p.verdict(), state, gt, truth)
		}
		if m.warned(t) {
			t.Fatalf("read %d: price_sources_disagree with one aggregator down", reads)
		}
		s := readStatus(t, m.api)
		statuses[s.Status]++
		agg = s.Checks.MarketAggregator
		if priceProblem(s) != "" {
			t.Fatalf("/api/status with one aggregator down: %s %q", s.Status, s.Problems)
		}
	}

	bound := 2*marketRefresh + 3*time.Second // a poll under -race on a busy machine takes longer than its interval
	recovery := m.recoverAgreed(t, truth, bound)
	recordRow(t, matrixRow{Order: 15, Fault: "one aggregator down (GeckoTerminal: every connection reset; polls of 1 s)",
		During: fmt.Sprintf("200, DexScreener's price %s USD in every answer (%d reads); `cross_check` `single_source`, GeckoTerminal `down`; no `price_sources_disagree`; seen %s after the fault began",
			truth, reads, roundDuration(seenAfter)),
		Status:   fmt.Sprintf("%s; no price problem (`single_source` does not degrade it); `market_aggregator` %s (GeckoTerminal's outage is shown only in `cross_check`)", counts(statuses), agg.Status),
		Recovery: recovery, Bound: bound})
}
