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

// getTokenAccounts is the Helius DAS method: token accounts by mint and/or
// owner, paginated by cursor (until a page has no accounts) or by page.
func (s *Server) getTokenAccounts(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	var p dasParams
	if err := json.Unmarshal(params, &p); err != nil || len(bytes.TrimSpace(params)) == 0 || bytes.TrimSpace(params)[0] != '{' {
		return nil, invalidParams("Invalid params: expected an object with mint and/or owner")
	}
	if p.Mint == nil && p.Owner == nil {
		return nil, invalidParams("Invalid params: mint or owner is required")
	}
	limit := dasDefaultLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	if limit < 1 || limit > dasMaxLimit {
		return nil, invalidParams("Invalid params: limit must be between 1 and 1000")
	}
	if p.Before != nil || p.After != nil {
		return nil, invalidParams("Invalid params: before/after are not supported by this simulator; use cursor")
	}
	if p.Page != nil && p.Cursor != nil {
		return nil, invalidParams("Invalid params: cannot use both page and cursor")
	}
	if p.Page != nil && *p.Page < 1 {
		return nil, invalidParams("Invalid params: page must be at least 1")
	}
	showZero := p.Options != nil && p.Options.ShowZeroBalance

	var owner *ledger.Key
	if p.Owner != nil {
		k, err := ledger.ParseKey(*p.Owner)
		if err != nil {
			return nil, invalidParams("Invalid params: owner: invalid address")
		}
		owner = &k
	}
	lag := viewOf(ctx).lag
	var sets []ledger.HolderView
	if p.Mint != nil {
		k, err := ledger.ParseKey(*p.Mint)
		if err != nil {
			return nil, invalidParams("Invalid params: mint: invalid address")
		}
		if hv, ok := s.ledger.Holders(k, lag); ok {
			sets = append(sets, hv)
		}
	} else {
		sets = s.ledger.AllHolders(lag)
	}

	startTok, startIdx, skip := 0, 0, 0
	if p.Cursor != nil {
		t, i, ok := parseDASCursor(*p.Cursor)
		if !ok {
			return nil, invalidParams("Invalid params: invalid cursor")
		}
		startTok, startIdx = t, i+1
	}
	if p.Page != nil {
		skip = (*p.Page - 1) * limit
	}

	type item struct {
		Address         string `json:"address"`
		Mint            string `json:"mint"`
		Owner           string `json:"owner"`
		Amount          uint64 `json:"amount"`
		DelegatedAmount uint64 `json:"delegated_amount"`
		Frozen          bool   `json:"frozen"`
	}
	items := make([]item, 0, min(limit, 1000))
	hide := viewOf(ctx).hide // NodeHide: the first hide accounts of each mint are missing
	lastTok, lastIdx := 0, 0
scan:
	for t := startTok; t < len(sets); t++ {
		hs := sets[t]
		i0 := hide
		if t == startTok {
			i0 = max(startIdx, hide)
		}
		for i := i0; i < hs.Total(); i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return nil, &rpcError{Code: -32603, Message: "Internal error"}
			}
			st := hs.State(i)
			amt := st.Amount
			if st.Closed || amt == 0 && !showZero {
				continue
			}
			var own ledger.Key
			if owner != nil {
				if own = hs.Owner(i); own != *owner {
					continue
				}
			}
			if skip > 0 {
				skip--
				continue
			}
			if owner == nil {
				own = hs.Owner(i)
			}
			items = append(items, item{
				Address: hs.Address(i).String(),
				Mint:    hs.Mint().String(),
				Owner:   own.String(),
				Amount:  amt,
			})
			lastTok, lastIdx = t, i
			if len(items) == limit {
				break scan
			}
		}
	}
	// A lagging node's index is as far behind as its ledger.
	indexed := s.ledger.Slot()
	if v := viewOf(ctx); v.lag > 0 {
		indexed -= min(v.lag, indexed)
	}
	res := struct {
		LastIndexedSlot uint64 `json:"last_indexed_slot"`
		Total           int    `json:"total"`
		Limit           int    `json:"limit"`
		Page            *int   `json:"page,omitempty"`
		Cursor          string `json:"cursor,omitempty"`
		TokenAccounts   []item `json:"token_accounts"`
	}{
		LastIndexedSlot: max(indexed, confirmedLag) - confirmedLag,
		Total:           len(items),
		Limit:           limit,
		Page:            p.Page,
		TokenAccounts:   items,
	}
	if p.Page == nil && len(items) > 0 {
		res.Cursor = dasCursor(lastTok, lastIdx)
	}
	return jsonResult(res), nil
}
