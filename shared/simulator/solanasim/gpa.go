package solanasim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

const (
	maxFilters          = 4
	maxMemcmpBytes      = 128
	maxMemcmpBase58Size = 175
)

// filter is one getProgramAccounts filter.
type filter struct {
	dataSize   *uint64
	offset     int
	bytes      []byte
	memcmp     bool
	tokenState bool
}

func (f *filter) match(data []byte) bool {
	switch {
	case f.dataSize != nil:
		return uint64(len(data)) == *f.dataSize
	case f.memcmp:
		end := f.offset + len(f.bytes)
		return end <= len(data) && bytes.Equal(data[f.offset:end], f.bytes)
	case f.tokenState:
		return len(data) >= ledger.TokenAccountLen && data[108] != 0 &&
			(len(data) == ledger.TokenAccountLen || data[ledger.TokenAccountLen] == ledger.AccountTypeAccount)
	}
	return true
}

func parseFilters(raws []json.RawMessage) ([]filter, *rpcError) {
	if len(raws) > maxFilters {
		return nil, invalidParams(fmt.Sprintf("Too many filters provided; max %d", maxFilters))
	}
	out := make([]filter, 0, len(raws))
	for _, raw := range raws {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			if str != "tokenAccountState" {
				return nil, invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`.", str))
			}
			out = append(out, filter{tokenState: true})
			continue
		}
		var f struct {
			DataSize *uint64 `json:"dataSize"`
			Memcmp   *struct {
				Offset   *uint64 `json:"offset"`
				Bytes    *string `json:"bytes"`
				Encoding string  `json:"encoding"`
			} `json:"memcmp"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || (f.DataSize == nil) == (f.Memcmp == nil) {
			return nil, invalidParams("Invalid params: data did not match any variant of untagged enum RpcFilterType.")
		}
		if f.DataSize != nil {
			out = append(out, filter{dataSize: f.DataSize})
			continue
		}
		m := f.Memcmp
		if m.Offset == nil || m.Bytes == nil || *m.Offset > 1<<20 {
			return nil, invalidParams("Invalid params: memcmp needs offset and bytes.")
		}
		var b []byte
		var err error
		switch m.Encoding {
		case "", "base58", "binary":
			if len(*m.Bytes) > maxMemcmpBase58Size {
				return nil, invalidParams("Invalid param: filter: encoded binary (base 58) data should be less than 129 bytes")
			}
			b, err = base58.Decode(*m.Bytes)
		case "base64":
			b, err = base64.StdEncoding.DecodeString(*m.Bytes)
		default:
			return nil, invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`, expected `base58` or `base64`.", m.Encoding))
		}
		if err != nil || len(*m.Bytes) == 0 {
			return nil, invalidParams("Invalid param: filter: invalid memcmp bytes")
		}
		if len(b) > maxMemcmpBytes {
			return nil, invalidParams("Invalid param: filter: data too large")
		}
		out = append(out, filter{memcmp: true, offset: int(*m.Offset), bytes: b})
	}
	return out, nil
}

// mintIndexKey applies the node's rule for serving a token program query
// from its mint secondary index: a 32-byte memcmp at offset 0, with either
// dataSize 165, or (Token-2022) a memcmp of [2] at offset 165, or the
// tokenAccountState filter.
func mintIndexKey(program ledger.Key, fs []filter) (ledger.Key, bool) {
	var mint *ledger.Key
	sizeOK, typeOK, stateOK := false, false, false
	for i := range fs {
		f := &fs[i]
		switch {
		case f.dataSize != nil:
			sizeOK = *f.dataSize == ledger.TokenAccountLen
		case f.memcmp && f.offset == ledger.TokenAccountLen && program == ledger.ProgramToken2022.Key():
			typeOK = bytes.Equal(f.bytes, []byte{ledger.AccountTypeAccount})
		case f.memcmp && f.offset == 0 && len(f.bytes) == 32:
			var p ledger.Key
			copy(p[:], f.bytes)
			mint = &p
		case f.tokenState:
			stateOK = true
		}
	}
	if mint != nil && (sizeOK || typeOK || stateOK) {
		return *mint, true
	}
	return ledger.Key{}, false
}

type programAccountsConfig struct {
	commitmentConfig
	Encoding    string            `json:"encoding"`
	DataSlice   *dataSlice        `json:"dataSlice"`
	Filters     []json.RawMessage `json:"filters"`
	WithContext bool              `json:"withContext"`
	SortResults *bool             `json:"sortResults"`
}

// programAccountsParams decodes getProgramAccounts' parameters: the
// program and the config, whose encoding must be one the node knows.
func programAccountsParams(params json.RawMessage) (ledger.Key, programAccountsConfig, *rpcError) {
	var cfg programAccountsConfig
	ps, e := positional(params, 1, 2)
	if e != nil {
		return ledger.Key{}, cfg, e
	}
	program, e := pubkeyParam(ps[0])
	if e != nil {
		return ledger.Key{}, cfg, e
	}
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return ledger.Key{}, cfg, e
	}
	if e := checkEncoding(cfg.Encoding); e != nil {
		return ledger.Key{}, cfg, e
	}
	return program, cfg, nil
}

func (s *Server) getProgramAccounts(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	program, cfg, e := programAccountsParams(params)
	if e != nil {
		return nil, e
	}
	switch cfg.Encoding {
	case "", "binary", "base58":
		if cfg.DataSlice == nil || cfg.DataSlice.Length > maxBase58Bytes {
			return nil, errBase58TooLarge
		}
	case "jsonParsed":
		return nil, invalidParams("Invalid params: jsonParsed is not supported by this simulator for getProgramAccounts; use base64.")
	}
	fs, e := parseFilters(cfg.Filters)
	if e != nil {
		return nil, e
	}
	slot, e := s.contextSlot(ctx, cfg.commitmentConfig)
	if e != nil {
		return nil, e
	}

	var sets []ledger.HolderView
	if program == ledger.ProgramToken.Key() || program == ledger.ProgramToken2022.Key() {
		mint, indexed := mintIndexKey(program, fs)
		lag := viewOf(ctx).lag
		switch {
		case indexed:
			if hv, ok := s.ledger.Holders(mint, lag); ok && hv.Program().Key() == program {
				sets = append(sets, hv)
			}
		case s.fullIndexes:
			for _, hv := range s.ledger.AllHolders(lag) {
				if hv.Program().Key() == program {
					sets = append(sets, hv)
				}
			}
		default:
			return nil, excludedError(program.String())
		}
	}

	owner := program.String()
	return func(o *out) error {
		if cfg.WithContext {
			_, _ = o.WriteString(`{"context":{"apiVersion":"` + s.version + `","slot":` + strconv.FormatUint(slot, 10) + `},"value":`)
		}
		if err := streamAccounts(ctx, o, sets, fs, cfg.DataSlice, cfg.Encoding, owner, s.flushEvery, viewOf(ctx).hide); err != nil {
			return err
		}
		if cfg.WithContext {
			return o.WriteByte('}')
		}
		return nil
	}, nil
}

// streamAccounts writes the JSON array of matching accounts, generating
// each one on the fly and flushing every flushEvery bytes. The first hide
// accounts of each set are left out (NodeHide).
func streamAccounts(ctx context.Context, o *out, sets []ledger.HolderView, fs []filter, slice *dataSlice, enc, owner string, flushEvery, hide int) error {
	if err := o.WriteByte('['); err != nil {
		return err
	}
	var (
		raw     [ledger.TokenAccountLen + 5]byte
		item    = make([]byte, 0, 512)
		first   = true
		pending = 0
	)
	for _, hs := range sets {
		for i := min(hide, hs.Total()); i < hs.Total(); i++ {
			a, open := hs.Account(i)
			if !open {
				continue
			}
			data := hs.Data(&a, raw[:])
			if !matchAll(fs, data) {
				continue
			}
			item = item[:0]
			if !first {
				item = append(item, ',')
			}
			first = false
			item = appendKeyedAccount(item, &a.Address, data, slice, enc, owner)
			if _, err := o.Write(item); err != nil {
				return err
			}
			pending += len(item)
			if pending >= flushEvery {
				pending = 0
				if err := o.flush(); err != nil {
					return err
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return o.WriteByte(']')
}

// appendKeyedAccount appends one {"pubkey":…,"account":{…}} element of a
// getProgramAccounts answer; enc was checked up front.
func appendKeyedAccount(item []byte, address *ledger.Key, data []byte, slice *dataSlice, enc, owner string) []byte {
	item = appendKeyedHead(item, address, len(data))
	item, _ = appendEncodedData(item, slice.apply(data), enc)
	return appendKeyedTail(item, owner, len(data))
}

// appendKeyedHead appends a keyed account up to its "data" value.
func appendKeyedHead(item []byte, address *ledger.Key, space int) []byte {
	item = append(item, `{"pubkey":"`...)
	item = address.AppendBase58(item)
	item = append(item, `","account":{"lamports":`...)
	item = strconv.AppendUint(item, ledger.RentExempt(space), 10)
	return append(item, `,"data":`...)
}

// appendKeyedTail appends a keyed account from after its "data" value.
func appendKeyedTail(item []byte, owner string, space int) []byte {
	item = append(item, `,"owner":"`...)
	item = append(item, owner...)
	item = append(item, `","executable":false,"rentEpoch":`...)
	item = append(item, maxRentEpoch...)
	item = append(item, `,"space":`...)
	item = strconv.AppendInt(item, int64(space), 10)
	return append(item, "}}"...)
}
