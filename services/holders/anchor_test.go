package holders_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// TestCollectorAnchors: the collector's own enumeration (its
// getProgramAccounts queries through its RPC client, Token-2022's two)
// anchors a Follower: the document's figures are the ledger's, and the
// live count follows the changes made after it; with no socket there is
// no anchor.
func TestCollectorAnchors(t *testing.T) {
	for _, tok := range []solanasim.Token{holderstest.ClassicToken(150), holderstest.T22Token(150)} {
		t.Run(tok.Program.ID(), func(t *testing.T) {
			fw := holderstest.StartFollow(t, tok)
			// the reads at the subscription's commitment: at confirmed
			// (the default) the enumeration is 32 slots past every
			// finalized notification, which it would then skip
			cfg := holders.DefaultConfig()
			cfg.Commitment = "finalized"
			fx := newCollector(t, setup{url: fw.URL, mint: tok.Mint, cfg: cfg})
			if _, err := fx.c.Anchor(context.Background(), follow.New(fw.Mint, fw.Program, 0, 10)); !errors.Is(err, follow.ErrNotFollowing) {
				t.Fatalf("an anchor with no socket: %v", err)
			}
			doc, err := fx.c.Anchor(context.Background(), fw.F)
			if err != nil {
				t.Fatal(err)
			}
			checkTruth(t, fw.Sim, tok.Mint, doc)
			wantQueries := 1
			if tok.Program == solanasim.ProgramToken2022 {
				wantQueries = 2
			}
			if len(doc.Queries) != wantQueries || doc.Slot == 0 || doc.Method != contract.HoldersMethodGPA {
				t.Errorf("document: %d queries, slot %d, method %q", len(doc.Queries), doc.Slot, doc.Method)
			}
			if c := fw.Exact("anchored by the collector", 0); c.Slot < doc.Slot {
				t.Errorf("live slot %d before the enumeration's %d", c.Slot, doc.Slot)
			}
			fw.Record(fw.Sim.OpenHolder(tok.Mint, 10))
			fw.Exact("a new holder", 0)
			from := pickAny(fw)
			fw.Record(fw.Sim.SetHolderBalance(tok.Mint, from, 0))
			fw.Exact("a holder sold out", 0)
		})
	}
}

// pickAny is an account of the ledger with a positive balance: the
// largest (the test's record is filled by Enumerate, which this test does
// not run).
func pickAny(fw *holderstest.FollowNode) string {
	fw.T.Helper()
	largest, _ := fw.Sim.Largest(fw.Token.Mint)
	for _, a := range largest {
		if a.Amount > 0 {
			return a.Address
		}
	}
	fw.T.Fatal("no account with a balance")
	return ""
}
