package market

import (
	"context"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// lastSample is the newest raw point of measure m, and how many there are.
func (h *harness) lastSample(m contract.Measure) (contract.Point, int) {
	h.t.Helper()
	r, err := h.store.History(context.Background(), m, contract.Window24h, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.Points) == 0 {
		return contract.Point{}, 0
	}
	return r.Points[len(r.Points)-1], len(r.Points)
}

// TestPollAppendsTheMarketHistory: a good poll appends the figures the
// edge publishes, at the document's updated_at, exactly: the price, the
// market cap from the store's supply document, the FDV from the token
// file, the liquidity and the 24 h volume. A failed poll and a market
// without a price append nothing.
func TestPollAppendsTheMarketHistory(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, setup{redis: true, maxSupply: "1000000000", official: dexsim.Scenario(mint, 42).OfficialPairs()})
	h.sim.LoadScenario(mint, 42)

	m := h.poll()
	if p, n := h.lastSample(contract.MeasurePriceUSD); n != 1 || p.V != m.PriceUSD.String() || p.T != h.envelope().UpdatedAt.UnixMilli() {
		t.Fatalf("price sample %+v (%d), want %s at the document's updated_at", p, n, m.PriceUSD)
	}
	if _, n := h.lastSample(contract.MeasureMarketCapUSD); n != 0 {
		t.Error("a market cap was sampled without a supply document")
	}

	supply, err := contract.NewEnvelope(mint, contract.DomainSupply, time.Now(), contract.Source{Name: contract.UpstreamSolanaRPC},
		contract.Supply{Decimals: 6, TotalRaw: "987654321123456", CirculatingRaw: "987654321123456"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Write(ctx, supply, time.Hour); err != nil {
		t.Fatal(err)
	}
	m = h.poll()
	want := map[contract.Measure]string{
		contract.MeasurePriceUSD:     m.PriceUSD.String(),
		contract.MeasureMarketCapUSD: amount.RoundUSD(m.PriceUSD.Mul(dec("987654321.123456")), amount.Significant(*m.PriceUSD)).String(),
		contract.MeasureFDVUSD:       amount.RoundUSD(m.PriceUSD.Mul(dec("1000000000")), amount.Significant(*m.PriceUSD)).String(),
		contract.MeasureLiquidityUSD: m.LiquidityUSD.String(),
		contract.MeasureVolume24hUSD: m.VolumeUSD.H24.String(),
	}
	for ms, v := range want {
		if p, _ := h.lastSample(ms); p.V != v {
			t.Errorf("%s sample = %q, want %q", ms, p.V, v)
		}
	}

	h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.HTTP500})
	h.sim.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP500})
	if err := h.c.RunOnce(ctx); err == nil {
		t.Fatal("the poll succeeded under faults")
	}
	h.sim.Faults().ClearAll()
	if _, n := h.lastSample(contract.MeasurePriceUSD); n != 2 {
		t.Errorf("%d price samples after a failed poll, want 2", n)
	}

	h.sim.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.PairsEmpty})
	if m := h.poll(); m.Status != contract.MarketNotIndexed {
		t.Fatalf("status %s", m.Status)
	}
	for _, ms := range []contract.Measure{contract.MeasurePriceUSD, contract.MeasureLiquidityUSD, contract.MeasureVolume24hUSD} {
		if _, n := h.lastSample(ms); n != 2 {
			t.Errorf("%s: %d samples after a not-indexed poll, want 2", ms, n)
		}
	}
}
