package holders

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// maxDASPages stops a node whose cursor never ends (100 M accounts at
// 1,000 a page).
const maxDASPages = 100_000

// enumerateDAS pages through getTokenAccounts by cursor until a page has
// no accounts or no cursor.
func (c *Collector) enumerateDAS(ctx context.Context, rpc *rpcClient, count *tally.Count, started time.Time) (contract.Holders, error) {
	doc := contract.Holders{Queries: []string{fmt.Sprintf(
		"getTokenAccounts (Helius DAS): mint, showZeroBalance, cursor pages of %d", c.cfg.DASPageLimit)}}
	prog := c.newProgress(started)
	// DAS takes no minContextSlot: each page's last_indexed_slot is
	// compared with the slot of the count last published instead, and an
	// index behind it is discarded as a node behind is (never published).
	var min uint64
	if env, ok := c.runner.Last(contract.DomainHolders); ok {
		min = env.Source.Slot
	}
	cursor := ""
	for page := 0; ; page++ {
		if page >= maxDASPages {
			return doc, collector.Errorf(contract.ErrKindInvalid, false,
				"getTokenAccounts: still paging after %d pages; the cursor does not end", maxDASPages)
		}
		var (
			next string
			n    int
			slot uint64
		)
		params := wire.DASPageParams(c.mint, c.cfg.DASPageLimit, cursor)
		err := rpc.call(ctx, methodDAS, params, func(r io.Reader) error {
			var err error
			next, n, slot, err = wire.DecodeDASPage(r, c.mint, count)
			return err
		})
		if err != nil {
			return doc, err
		}
		if min > 0 && slot != 0 && slot < min {
			return doc, &collector.Error{Kind: contract.ErrKindBehind, Retry: true,
				Message: fmt.Sprintf("%s: the index is at slot %d, before slot %d of the holders count last published; that count stays", methodDAS, slot, min)}
		}
		if slot != 0 && (doc.Slot == 0 || slot < doc.Slot) {
			doc.Slot = slot
		}
		prog.report(count.TokenAccounts)
		if n == 0 || next == "" {
			return doc, nil
		}
		if next == cursor {
			return doc, collector.Errorf(contract.ErrKindInvalid, false, "getTokenAccounts: the cursor did not advance")
		}
		cursor = next
	}
}
