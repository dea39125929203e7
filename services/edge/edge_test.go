package edge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// allPaths are the 14 paths of README, Endpoints and the OpenAPI document.
var allPaths = []string{
	view.PathTotalSupply, view.PathCirculatingSupply, view.PathMaxSupply, view.PathSupply, view.PathCoinGeckoSupply, view.PathPrice, view.PathHolders,
	view.PathTokenMetadata, view.PathHealth, view.PathExchanges, view.PathMarket, view.PathMarketData, view.PathStatus, view.PathMarketPairs, view.PathOpenAPI, view.PathKeys,
}

func goldenName(scenario, path string) string {
	return scenario + "/" + strings.TrimPrefix(strings.ReplaceAll(path, "/", "_"), "_api_")
}

// scenarios fill the store of a fresh harness.
var scenarios = map[string]func(h *harness){
	// every domain present and fresh, every collector ok
	"full": func(h *harness) { h.writeAll() },
	// nothing collected yet
	"empty": func(*harness) {},
	// only supply: composites answer 200 with nulls and `missing`
	"supply-only": func(h *harness) { h.write(contract.DomainSupply, edgetest.Supply(), 10e9) },
	// the aggregator does not list the token; the node cannot enumerate holders
	"not-indexed": func(h *harness) {
		for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
			h.write(d, edgetest.Doc(d), 30e9)
		}
		h.write(contract.DomainMarket, edgetest.NotIndexed(), 30e9)
		for _, s := range edgetest.Statuses(t0.Add(-30e9)) {
			if s.Collector == contract.CollectorHolders {
				s = edgetest.Unsupported(t0.Add(-10e9))
			}
			if err := h.store.WriteStatus(t0Ctx, s); err != nil {
				h.t.Fatal(err)
			}
		}
	},
	// market older than its stale-after (180 s)
	"stale-market": func(h *harness) {
		h.writeAll()
		h.write(contract.DomainMarket, edgetest.Market(), 200e9)
	},
	// everything collected; the issuer discloses no maximum supply (token
	// of scenarioTokens)
	"max-not-disclosed": func(h *harness) {
		h.writeAll()
		h.write(contract.DomainSupply, edgetest.SupplyMaxNotDisclosed(), 30e9)
	},
	// three ledger nodes: two confirm the supply, the third answers another
	// amount at a later slot (the figure's cross_check, degraded); the
	// last poll found no quorum (status degraded, naming the nodes)
	"cross-checked": func(h *harness) {
		h.writeAll()
		sp := edgetest.Supply()
		sp.CrossCheck = crossCheck(contract.CrossCheckDegraded, 2)
		h.write(contract.DomainSupply, sp, 30e9)
		for _, s := range edgetest.Statuses(t0.Add(-10e9)) {
			if s.Collector == contract.CollectorSupply {
				run := s.Runs[contract.DomainSupply]
				run.Ledger = crossCheck(contract.CrossCheckNoQuorum, 1)
				s.Runs[contract.DomainSupply] = run
			}
			if err := h.store.WriteStatus(t0Ctx, s); err != nil {
				h.t.Fatal(err)
			}
		}
	},
	// the aggregators price the selected pair 5.35 % apart, beyond the 2 %
	// tolerance and within the 20 % hold bound: DexScreener's price is
	// published with both figures, the collector's price_sources_disagree
	// warning and status degraded (the price cross-check's disagree
	// verdict: docs/decisions.md, Market cross-check)
	"price-disagree": func(h *harness) {
		h.writeAll()
		m := edgetest.Market()
		m.CrossCheck = priceCheck(contract.PriceDisagree)
		m.Warnings = []contract.Warning{{Code: contract.WarnPriceSourcesDisagree, Message: m.CrossCheck.Reason}}
		h.write(contract.DomainMarket, m, 30e9)
	},
	// the second holder source counts 241 holders fewer 40 slots later,
	// beyond the 25 those slots allow: the primary's count is published
	// with the cross-check, the holders_sources_disagree warning and status
	// degraded (a second holder source is a witness, not a vote:
	// docs/decisions.md, Holders)
	"holders-disagree": func(h *harness) {
		h.writeAll()
		d := edgetest.Holders()
		d.CrossCheck = &contract.HoldersCheck{Verdict: contract.HoldersDisagree,
			Primary:      contract.HoldersCount{Method: contract.HoldersMethodGPA, Holders: 18342, Slot: 312345600},
			Secondary:    contract.HoldersCount{Method: contract.HoldersMethodDAS, Holders: 18101, Slot: 312345640},
			SlotDistance: 40, Difference: 241, AllowedChurn: 25,
			Reason:    "the primary (getProgramAccounts) counts 18342 holders at slot 312345600, the second source (das) 18101 at slot 312345640: 241 apart, beyond the 25 the 40 slots between them allow; the primary's count is published, not confirmed",
			CheckedAt: t0.Add(-40 * time.Second)}
		d.Warnings = []contract.Warning{{Code: contract.WarnHoldersSourcesDisagree, Message: d.CrossCheck.Reason}}
		h.write(contract.DomainHolders, d, 30e9)
	},
	// a live holder count (HOLDERS_LIVE) whose last resync found the
	// enumeration 3 holders above the count the notifications kept: the
	// enumeration's count is published and followed, with the
	// holders_live_count_differed warning and status degraded
	"holders-live": func(h *harness) {
		h.writeAll()
		d := edgetest.Holders()
		d.Method, d.Slot, d.TokenAccounts = contract.HoldersMethodLive, 312345988, d.TokenAccounts+4
		d.Live = &contract.HoldersLive{AnchorMethod: contract.HoldersMethodGPA, AnchorSlot: 312345600,
			AnchoredAt: t0.Add(-10 * time.Minute), AnchorTokenAccounts: d.TokenAccounts - 4, Notifications: 57,
			NextResyncAt: t0.Add(5 * time.Minute),
			Resync:       &contract.HoldersResync{Agreed: false, Live: 18339, Enumerated: 18342, Slot: 312345640, CheckedAt: t0.Add(-9 * time.Minute)}}
		d.Warnings = []contract.Warning{{Code: contract.WarnHoldersLiveDiffered,
			Message: "the live holder count (18339) differed from the enumeration that re-anchored it (18342) at slot 312345640; the enumeration's count is published and followed from there"}}
		h.writeFrom(contract.DomainHolders, d, 2e9, contract.Source{Name: contract.UpstreamSolanaRPC, Method: contract.HoldersMethodLive,
			Commitment: "finalized", Slot: d.Slot})
		noted := t0.Add(-2 * time.Second)
		for _, s := range edgetest.Statuses(t0.Add(-2e9)) {
			if s.Collector == contract.CollectorHolders {
				s.Subscriptions = []contract.LedgerSubscription{{Node: 1, State: contract.SubscriptionConnected,
					Since: t0.Add(-10 * time.Minute), LastNotificationAt: &noted, LastNotificationSlot: d.Slot, Reconnects: 1}}
			}
			if err := h.store.WriteStatus(t0Ctx, s); err != nil {
				h.t.Fatal(err)
			}
		}
	},
	// minted past the configured maximum supply: status degraded
	"total-above-max": func(h *harness) {
		h.writeAll()
		h.write(contract.DomainSupply, edgetest.SupplyAboveMax(), 30e9)
	},
}

// scenarioTokens are the token files of the scenarios that do not serve
// edgetest.Token().
var scenarioTokens = map[string]func() config.Token{
	"max-not-disclosed": edgetest.TokenMaxNotDisclosed,
}

// newScenarioHarness is a fresh harness with the token of scenario name.
func newScenarioHarness(t testing.TB, name string) *harness {
	t.Helper()
	if tok, ok := scenarioTokens[name]; ok {
		return newHarnessOf(t, tok(), nil)
	}
	return newHarness(t, nil)
}

// TestGolden renders every path in every scenario through the real Gin
// engine and compares status, headers and body with testdata/.
func TestGolden(t *testing.T) {
	for name, fill := range scenarios {
		t.Run(name, func(t *testing.T) {
			h := newScenarioHarness(t, name)
			fill(h)
			h.refresh()
			for _, p := range allPaths {
				rec := h.do(http.MethodGet, p)
				checkCommon(t, p, rec)
				if p == view.PathOpenAPI {
					continue // the document itself is in the repository
				}
				checkGolden(t, goldenName(name, p), dump(rec))
			}
		})
	}
}

// checkCommon asserts what every response carries.
func checkCommon(t *testing.T, path string, rec *httptest.ResponseRecorder) {
	t.Helper()
	hd := rec.Header()
	if hd.Get("Access-Control-Allow-Origin") != "*" || hd.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: CORS or nosniff missing: %v", path, hd)
	}
	if hd.Get("X-Request-Id") != "" {
		t.Errorf("%s: an X-Request-Id the client did not send: %q", path, hd.Get("X-Request-Id"))
	}
	body := rec.Body.String()
	switch {
	case rec.Code == http.StatusOK:
		if !regexp.MustCompile(`^"[A-Za-z0-9_-]{22}"$`).MatchString(hd.Get("Etag")) {
			t.Errorf("%s: ETag %q", path, hd.Get("Etag"))
		}
		if strings.HasPrefix(hd.Get("Content-Type"), "text/plain") {
			if !regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$`).MatchString(body) {
				t.Errorf("%s: text body %q is not an exact decimal without trailing newline", path, body)
			}
		} else if !json.Valid([]byte(body)) {
			t.Errorf("%s: invalid JSON", path)
		}
	case rec.Code >= 400:
		var e answer.ErrorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Status != rec.Code || e.Error.Code == "" {
			t.Errorf("%s: error body %s", path, body)
		}
		if hd.Get("Cache-Control") != "no-store" && rec.Code >= 500 {
			t.Errorf("%s: 5xx without no-store", path)
		}
		if rec.Code == http.StatusServiceUnavailable && hd.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", path)
		}
	}
	for _, secret := range []string{"api-key", "redis://", "mainnet-beta"} {
		if strings.Contains(body, secret) {
			t.Errorf("%s: body contains %q", path, secret)
		}
	}
}

// crossCheck is a cross-check of three ledger nodes in state, agreed of
// them confirming edgetest.Supply's total: node 1 agrees; node 2 agrees
// (agreed 2) or lags 1,000 slots behind with nothing usable (agreed 1);
// node 3 answers another amount at a later slot, or is down.
func crossCheck(state string, agreed int) *contract.LedgerCrossCheck {
	six := uint8(6)
	c := &contract.LedgerCrossCheck{State: state, Nodes: 3, Quorum: 2, Agreed: agreed, Slot: 312345678, MinContextSlot: 312345000,
		PerNode: []contract.LedgerNode{{Node: 1, Verdict: contract.NodeAgreed, Slot: 312345678, AmountRaw: "999999999123456", Decimals: &six}}}
	if agreed == 2 {
		c.PerNode = append(c.PerNode,
			contract.LedgerNode{Node: 2, Verdict: contract.NodeAgreed, Slot: 312345679, AmountRaw: "999999999123456", Decimals: &six},
			contract.LedgerNode{Node: 3, Verdict: contract.NodeDisagreeing, Slot: 312345690, AmountRaw: "999999998000000", Decimals: &six})
		c.Issues = []string{"node 3 answers 999999998.000000 at slot 312345690, where the quorum reads 999999999.123456"}
		return c
	}
	c.Slot = 0
	c.PerNode = append(c.PerNode,
		contract.LedgerNode{Node: 2, Verdict: contract.NodeLagging, Slot: 312344678, SlotsBehind: 1000},
		contract.LedgerNode{Node: 3, Verdict: contract.NodeDown, Error: contract.ErrKindUnavailable})
	c.Issues = []string{"node 2 lags 1000 slots behind the required slot", "node 3 is down (upstream_unavailable)"}
	return c
}

// priceCheck is a cross-check of edgetest.Market's price in verdict:
// DexScreener (primary) prices the selected pair at 0.00001234 USD,
// GeckoTerminal at 0.000013 USD (5.35 % apart), with the default bounds;
// held lowers the hold bound to 5 % (its first held poll); unconfirmed
// is a move to 0.00002468 USD that DexScreener sees while GeckoTerminal
// is down (rate limited), pending.
func priceCheck(verdict string) *contract.PriceCheck {
	d := func(s string) *decimal.Decimal { v := decimal.RequireFromString(s); return &v }
	at := t0.Add(-30 * time.Second)
	c := &contract.PriceCheck{Verdict: verdict, Primary: contract.UpstreamDexScreener, Pair: edgetest.PairSOL,
		Sources: []contract.PriceSource{
			{Name: contract.UpstreamDexScreener, State: contract.SourceOK, PriceUSD: d("0.00001234"), SelectedPair: edgetest.PairSOL},
			{Name: contract.UpstreamGeckoTerminal, State: contract.SourceOK, PriceUSD: d("0.000013"), SelectedPair: edgetest.PairSOL}},
		Deviation: d("0.053484602917"), Tolerance: *d("0.02"), HoldBound: *d("0.2"), MoveBound: *d("0.5"), MaxHeldPolls: 5,
		CheckedAt: at,
		Reason: "The aggregators disagree: geckoterminal prices pair " + edgetest.PairSOL +
			" at 0.000013 USD, 5.35% from dexscreener's 0.00001234 USD, beyond the 2% tolerance; dexscreener's figures are published."}
	switch verdict {
	case contract.PriceSingleSource: // GeckoTerminal down, DexScreener fine
		c.Sources[1] = contract.PriceSource{Name: contract.UpstreamGeckoTerminal, State: contract.SourceDown, ErrorKind: contract.ErrKindUnavailable}
		c.Deviation = nil
		c.Reason = "Only dexscreener prices pair " + edgetest.PairSOL + " (geckoterminal: down); the price is not cross-checked."
	case contract.PriceHeld:
		c.HeldPolls, c.HoldBound = 1, *d("0.05")
		c.Reason = "The aggregators disagree: geckoterminal prices pair " + edgetest.PairSOL +
			" at 0.000013 USD, 5.35% from dexscreener's 0.00001234 USD, beyond the 5% hold bound; the last published price is held (poll 1 of at most 5)."
	case contract.PriceUnconfirmed:
		c.Sources[0].PriceUSD = d("0.00002468")
		c.Sources[1] = contract.PriceSource{Name: contract.UpstreamGeckoTerminal, State: contract.SourceDown, ErrorKind: contract.ErrKindRateLimited}
		c.Deviation = nil
		c.Pending = &contract.PendingPrice{Kind: contract.PendingPriceMove, Pair: edgetest.PairSOL, PriceUSD: *d("0.00002468"),
			Source: contract.UpstreamDexScreener, Since: at}
		c.Reason = "dexscreener sees a move of 100% (0.00001234 to 0.00002468 USD) that geckoterminal does not confirm; the last published price is held until the next poll confirms it."
	}
	return c
}
