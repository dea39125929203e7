package solanasim

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

const (
	dasDefaultLimit = 100
	dasMaxLimit     = 1000
)

type dasParams struct {
	Mint    *string `json:"mint"`
	Owner   *string `json:"owner"`
	Limit   *int    `json:"limit"`
	Page    *int    `json:"page"`
	Cursor  *string `json:"cursor"`
	Before  *string `json:"before"`
	After   *string `json:"after"`
	Options *struct {
		ShowZeroBalance bool `json:"showZeroBalance"`
	} `json:"options"`
}

// dasCursor encodes a position (token ordinal, account index) as an opaque
// base58 string.
func dasCursor(tok, idx int) string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(tok))
	binary.BigEndian.PutUint64(b[4:], uint64(idx))
	return base58.Encode(b[:])
}

func parseDASCursor(s string) (tok, idx int, ok bool) {
	b, err := base58.Decode(s)
	if err != nil || len(b) != 12 {
		return 0, 0, false
	}
	t, i := binary.BigEndian.Uint32(b[:4]), binary.BigEndian.Uint64(b[4:])
	if i > 1<<40 {
		return 0, 0, false
	}
	return int(t), int(i), true
}

// dasQuery is a getTokenAccounts request, checked: the mint and the
// owner it names (nil: any), the page size, and where the page starts
// (after the cursor's account, or skip accounts in).
type dasQuery struct {
	mint, owner        *ledger.Key
	limit              int
	page               *int
	showZero           bool
	startTok, startIdx int
	skip               int
}

// dasItem is one token account of a getTokenAccounts page.
type dasItem struct {
	Address         string `json:"address"`
	Mint            string `json:"mint"`
	Owner           string `json:"owner"`
	Amount          uint64 `json:"amount"`
	DelegatedAmount uint64 `json:"delegated_amount"`
	Frozen          bool   `json:"frozen"`
}

// getTokenAccounts is the Helius DAS method: token accounts by mint and/or
// owner, paginated by cursor (until a page has no accounts) or by page.
func (s *Server) getTokenAccounts(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	q, e := parseDASQuery(params)
	if e != nil {
		return nil, e
	}
	v := viewOf(ctx)
	var sets []ledger.HolderView
	if q.mint != nil {
		if hv, ok := s.ledger.Holders(*q.mint, v.lag); ok {
			sets = append(sets, hv)
		}
	} else {
		sets = s.ledger.AllHolders(v.lag)
	}
	items, last, ok := scanDAS(ctx, sets, &q, v.hide) // NodeHide: the first hide accounts of each mint are missing
	if !ok {
		return nil, &rpcError{Code: -32603, Message: "Internal error"}
	}
	// A lagging node's index is as far behind as its ledger.
	indexed := s.ledger.Slot()
	indexed -= min(v.lag, indexed)
	res := struct {
		LastIndexedSlot uint64    `json:"last_indexed_slot"`
		Total           int       `json:"total"`
		Limit           int       `json:"limit"`
		Page            *int      `json:"page,omitempty"`
		Cursor          string    `json:"cursor,omitempty"`
		TokenAccounts   []dasItem `json:"token_accounts"`
	}{
		LastIndexedSlot: max(indexed, confirmedLag) - confirmedLag,
		Total:           len(items),
		Limit:           q.limit,
		Page:            q.page,
		TokenAccounts:   items,
	}
	if q.page == nil && len(items) > 0 {
		res.Cursor = dasCursor(last[0], last[1])
	}
	return jsonResult(res), nil
}

// parseDASQuery checks getTokenAccounts' params, as Helius does.
func parseDASQuery(params json.RawMessage) (dasQuery, *rpcError) {
	var p dasParams
	if err := json.Unmarshal(params, &p); err != nil || len(bytes.TrimSpace(params)) == 0 || bytes.TrimSpace(params)[0] != '{' {
		return dasQuery{}, invalidParams("Invalid params: expected an object with mint and/or owner")
	}
	if p.Mint == nil && p.Owner == nil {
		return dasQuery{}, invalidParams("Invalid params: mint or owner is required")
	}
	q := dasQuery{limit: dasDefaultLimit, page: p.Page, showZero: p.Options != nil && p.Options.ShowZeroBalance}
	if p.Limit != nil {
		q.limit = *p.Limit
	}
	switch {
	case q.limit < 1 || q.limit > dasMaxLimit:
		return dasQuery{}, invalidParams("Invalid params: limit must be between 1 and 1000")
	case p.Before != nil || p.After != nil:
		return dasQuery{}, invalidParams("Invalid params: before/after are not supported by this simulator; use cursor")
	case p.Page != nil && p.Cursor != nil:
		return dasQuery{}, invalidParams("Invalid params: cannot use both page and cursor")
	case p.Page != nil && *p.Page < 1:
		return dasQuery{}, invalidParams("Invalid params: page must be at least 1")
	}
	for _, a := range []struct {
		in   *string
		out  **ledger.Key
		name string
	}{{p.Owner, &q.owner, "owner"}, {p.Mint, &q.mint, "mint"}} {
		if a.in == nil {
			continue
		}
		k, err := ledger.ParseKey(*a.in)
		if err != nil {
			return dasQuery{}, invalidParams("Invalid params: " + a.name + ": invalid address")
		}
		*a.out = &k
	}
	if p.Cursor != nil {
		t, i, ok := parseDASCursor(*p.Cursor)
		if !ok {
			return dasQuery{}, invalidParams("Invalid params: invalid cursor")
		}
		q.startTok, q.startIdx = t, i+1
	}
	if p.Page != nil {
		q.skip = (*p.Page - 1) * q.limit
	}
	return q, nil
}

// scanDAS is the page q asks of the accounts of sets (the first hide of
// each left out), and the position of its last account (token ordinal,
// account index); false when ctx ended.
func scanDAS(ctx context.Context, sets []ledger.HolderView, q *dasQuery, hide int) (items []dasItem, last [2]int, ok bool) {
	items = make([]dasItem, 0, min(q.limit, 1000))
	skip := q.skip
	for t := q.startTok; t < len(sets); t++ {
		hs := sets[t]
		i0 := hide
		if t == q.startTok {
			i0 = max(q.startIdx, hide)
		}
		for i := i0; i < hs.Total(); i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return nil, last, false
			}
			st := hs.State(i)
			if st.Closed || st.Amount == 0 && !q.showZero {
				continue
			}
			var own ledger.Key // derived once, and not for a skipped account
			if q.owner != nil {
				if own = hs.Owner(i); own != *q.owner {
					continue
				}
			}
			if skip > 0 {
				skip--
				continue
			}
			if q.owner == nil {
				own = hs.Owner(i)
			}
			items = append(items, dasItem{
				Address: hs.Address(i).String(),
				Mint:    hs.Mint().String(),
				Owner:   own.String(),
				Amount:  st.Amount,
			})
			last = [2]int{t, i}
			if len(items) == q.limit {
				return items, last, true
			}
		}
	}
	return items, last, true
}
