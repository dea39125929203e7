package solanasim

// The endless faults: a node that does not stop talking.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// CodeInternalError is JSON-RPC's internal error.
const CodeInternalError = -32603

// HugeMessageBytes is the least size of a HugeError message.
const HugeMessageBytes = 8 << 20

// hugeMessage is the message of a HugeError: a node's diagnostics run on,
// with multi-byte characters so that a cut can fall inside one.
var hugeMessage = sync.OnceValue(func() string {
	const unit = "nœud: état interne incohérent, voir le journal € "
	return "Internal error: " + strings.Repeat(unit, HugeMessageBytes/len(unit)+1)
})

func hugeError() *rpcError {
	return &rpcError{Code: CodeInternalError, Message: hugeMessage()}
}

// endlessKey is the synthetic key number i of kind (1 owners, 2 account
// addresses).
func endlessKey(kind byte, i uint64) ledger.Key {
	var k ledger.Key
	for j := range k {
		k[j] = 0xE0 | kind
	}
	binary.LittleEndian.PutUint64(k[:8], i)
	return k
}

// endless answers method as a node that never reaches the end of its
// list; nil for a method that lists nothing (it answers normally).
func (s *Server) endless(ctx context.Context, method string, params json.RawMessage) (resultFunc, *rpcError) {
	switch method {
	case "getProgramAccounts":
		return s.endlessAccounts(ctx, params)
	case "getTokenAccounts":
		return s.endlessPage(params)
	}
	return nil, nil
}

// endlessAccounts streams getProgramAccounts elements, each a new owner
// with a balance of 1, until the client hangs up.
func (s *Server) endlessAccounts(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	program, cfg, e := programAccountsParams(params)
	if e != nil {
		return nil, e
	}
	if cfg.Encoding != "base64" {
		return nil, invalidParams("Invalid params: the endless_stream fault answers base64 only.")
	}
	slot, e := s.contextSlot(ctx, cfg.commitmentConfig)
	if e != nil {
		return nil, e
	}
	owner := program.String()
	return func(o *out) error {
		if cfg.WithContext {
			_, _ = o.WriteString(`{"context":{"apiVersion":"` + s.version + `","slot":` + strconv.FormatUint(slot, 10) + `},"value":`)
		}
		if err := o.WriteByte('['); err != nil {
			return err
		}
		var (
			data    [ledger.TokenAccountLen]byte
			item    = make([]byte, 0, 512)
			pending = 0
		)
		binary.LittleEndian.PutUint64(data[64:72], 1) // amount
		data[108] = 1                                 // initialized
		for i := uint64(0); ; i++ {
			own, addr := endlessKey(1, i), endlessKey(2, i)
			copy(data[32:64], own[:])
			item = item[:0]
			if i > 0 {
				item = append(item, ',')
			}
			item = appendKeyedAccount(item, &addr, data[:], cfg.DataSlice, cfg.Encoding, owner)
			if _, err := o.Write(item); err != nil {
				return err
			}
			if pending += len(item); pending >= s.flushEvery {
				pending = 0
				if err := o.flush(); err != nil {
					return err // the client hung up
				}
			}
			if i%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}, nil
}

// endlessPage answers getTokenAccounts with a full page of new owners and
// a cursor to the next, however far the client pages.
func (s *Server) endlessPage(params json.RawMessage) (resultFunc, *rpcError) {
	var p dasParams
	if err := json.Unmarshal(params, &p); err != nil || p.Mint == nil {
		return nil, invalidParams("Invalid params: the endless_stream fault needs a mint")
	}
	limit := dasDefaultLimit
	if p.Limit != nil && *p.Limit >= 1 && *p.Limit <= dasMaxLimit {
		limit = *p.Limit
	}
	start := 0
	if p.Cursor != nil {
		_, i, ok := parseDASCursor(*p.Cursor)
		if !ok {
			return nil, invalidParams("Invalid params: invalid cursor")
		}
		start = i + 1
	}
	type item struct {
		Address string `json:"address"`
		Mint    string `json:"mint"`
		Owner   string `json:"owner"`
		Amount  uint64 `json:"amount"`
	}
	items := make([]item, limit)
	for j := range items {
		i := uint64(start + j)
		items[j] = item{Address: endlessKey(2, i).String(), Mint: *p.Mint, Owner: endlessKey(1, i).String(), Amount: 1}
	}
	return jsonResult(struct {
		LastIndexedSlot uint64 `json:"last_indexed_slot"`
		Total           int    `json:"total"`
		Limit           int    `json:"limit"`
		Cursor          string `json:"cursor"`
		TokenAccounts   []item `json:"token_accounts"`
	}{max(s.ledger.Slot(), confirmedLag) - confirmedLag, limit, limit, dasCursor(0, start+limit-1), items}), nil
}
