package supply

import (
	"context"
	"testing"

	"github.com/tokendata/tokendata/shared/contract"
)

// TestPollAppendsTheSupplyHistory: each good supply poll appends the raw
// total, exactly as the document states it, at the document's time; the
// metadata poll appends nothing.
func TestPollAppendsTheSupplyHistory(t *testing.T) {
	tok := classic9()
	f := newFixture(t, tok, fixtureOpts{})
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)
	if err := f.sim.SetSupply(tok.Mint, 999_999_998_000_000_001); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, contract.DomainSupply)
	env, doc := f.supplyDoc(t) // the envelope and its document
	r, err := f.store.History(context.Background(), contract.MeasureSupply, contract.Window24h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 2 || r.Points[1].V != "999999998000000001" || r.Points[1].V != doc.TotalRaw ||
		r.Points[1].T != env.UpdatedAt.UnixMilli() {
		t.Errorf("supply history = %+v, want 2 samples, the last %s at %s", r.Points, doc.TotalRaw, env.UpdatedAt)
	}
}
