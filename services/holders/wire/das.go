package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// maxDASPage bounds the bytes of one getTokenAccounts page (1,000
// accounts take about 250 KB).
const maxDASPage = 16 << 20

// DASPageParams are the params of one getTokenAccounts page of mint's
// token accounts (Helius DAS): limit accounts from cursor ("" for the
// first page), the accounts at zero included.
func DASPageParams(mint string, limit int, cursor string) any {
	return dasParams{Mint: mint, Limit: limit, Cursor: cursor, Options: dasOptions{ShowZeroBalance: true}}
}

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
func DecodeDASPage(r io.Reader, mint string, c *tally.Count) (cursor string, n int, slot uint64, err error) {
	// A page is small: read it whole, so that a broken connection (a
	// read error) is told apart from an answer that is not valid JSON.
	body, err := io.ReadAll(io.LimitReader(r, maxDASPage+1))
	if err != nil {
		return "", 0, 0, &StreamError{err: err}
	}
	if len(body) > maxDASPage {
		return "", 0, 0, &SyntaxError{Offset: maxDASPage, Msg: "a getTokenAccounts page above 16 MiB"}
	}
	var p dasPage
	if err := json.Unmarshal(body, &p); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se) && se.Offset >= int64(len(body)):
			return "", 0, 0, fmt.Errorf("%w (getTokenAccounts page of %d bytes)", ErrTruncated, len(body))
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
	var owner tally.Owner
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
