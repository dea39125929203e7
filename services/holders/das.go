package holders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// maxDASPage bounds the bytes of one getTokenAccounts page (1,000
// accounts take about 250 KB).
const maxDASPage = 16 << 20

// maxDASPages stops a node whose cursor never ends (100 M accounts at
// 1,000 a page).
const maxDASPages = 100_000

type dasParams struct {
	Mint    string     `json:"mint"`
	Limit   int        `json:"limit"`
	Cursor  string     `json:"cursor,omitempty"`
	Options dasOptions `json:"options"`
}

type dasOptions struct {
	ShowZeroBalance bool `json:"showZeroBalance"`
}

// dasPage is one getTokenAccounts response. Amounts are u64 integers that
// may exceed 2^53: encoding/json parses them into uint64 exactly.
type dasPage struct {
	Result *struct {
		LastIndexedSlot uint64 `json:"last_indexed_slot"`
		Cursor          string `json:"cursor"`
		TokenAccounts   []struct {
			Address string  `json:"address"`
			Mint    string  `json:"mint"`
			Owner   string  `json:"owner"`
			Amount  *uint64 `json:"amount"`
		} `json:"token_accounts"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// DecodeDASPage reads one getTokenAccounts response and adds its accounts
// of mint to c. It returns the page's cursor (empty: none), the number of
// accounts and the last indexed slot. A page with an account of another
// mint, without amount or with an invalid owner is an error.
func DecodeDASPage(r io.Reader, mint string, c *Count) (cursor string, n int, slot uint64, err error) {
	// A page is small: read it whole, so that a broken connection (a
	// read error) is told apart from an answer that is not valid JSON.
	body, err := io.ReadAll(io.LimitReader(r, maxDASPage+1))
	if err != nil {
		return "", 0, 0, &streamError{err: err}
	}
	if len(body) > maxDASPage {
		return "", 0, 0, &SyntaxError{Offset: maxDASPage, Msg: "a getTokenAccounts page above 16 MiB"}
	}
	var p dasPage
	if err := json.Unmarshal(body, &p); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se) && se.Offset >= int64(len(body)):
			return "", 0, 0, fmt.Errorf("%w (getTokenAccounts page of %d bytes)", errTruncated, len(body))
		case errors.As(err, &se):
			return "", 0, 0, &SyntaxError{Offset: se.Offset, Msg: err.Error()}
		}
		return "", 0, 0, &SyntaxError{Msg: err.Error()}
	}
	switch {
	case p.Error != nil:
		return "", 0, 0, &RPCError{Code: p.Error.Code, Message: clipMessage([]byte(p.Error.Message))}
	case p.Result == nil:
		return "", 0, 0, &SyntaxError{Msg: "a JSON-RPC response without result or error"}
	}
	var owner Owner
	for i, a := range p.Result.TokenAccounts {
		if a.Mint != mint {
			return "", 0, 0, &SyntaxError{Msg: fmt.Sprintf("token_accounts[%d] is of mint %.44q, not %s", i, a.Mint, mint)}
		}
		if a.Amount == nil {
			return "", 0, 0, &SyntaxError{Msg: fmt.Sprintf("token_accounts[%d] has no amount", i)}
		}
		b, err := base58.Decode(a.Owner)
		if err != nil || len(b) != 32 {
			return "", 0, 0, &SyntaxError{Msg: fmt.Sprintf("token_accounts[%d].owner %.44q is not an address", i, a.Owner)}
		}
		copy(owner[:], b)
		if err := c.Add(&owner, *a.Amount); err != nil {
			return "", 0, 0, err
		}
	}
	return p.Result.Cursor, len(p.Result.TokenAccounts), p.Result.LastIndexedSlot, nil
}

// enumerateDAS pages through getTokenAccounts by cursor until a page has
// no accounts or no cursor.
func (c *Collector) enumerateDAS(ctx context.Context, rpc *rpcClient, count *Count, started time.Time) (contract.Holders, error) {
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
		params := dasParams{Mint: c.mint, Limit: c.cfg.DASPageLimit, Cursor: cursor, Options: dasOptions{ShowZeroBalance: true}}
		err := rpc.call(ctx, methodDAS, params, func(r io.Reader) error {
			var err error
			next, n, slot, err = DecodeDASPage(r, c.mint, count)
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
