package solanasim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/mr-tron/base58"
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
		return len(data) >= tokenAccountLen && data[108] != 0 &&
			(len(data) == tokenAccountLen || data[tokenAccountLen] == accountTypeAccount)
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
func mintIndexKey(program pubkey, fs []filter) (pubkey, bool) {
	var mint *pubkey
	sizeOK, typeOK, stateOK := false, false, false
	for i := range fs {
		f := &fs[i]
		switch {
		case f.dataSize != nil:
			sizeOK = *f.dataSize == tokenAccountLen
		case f.memcmp && f.offset == tokenAccountLen && program == token2022ProgramKey:
			typeOK = bytes.Equal(f.bytes, []byte{accountTypeAccount})
		case f.memcmp && f.offset == 0 && len(f.bytes) == 32:
			var p pubkey
			copy(p[:], f.bytes)
			mint = &p
		case f.tokenState:
			stateOK = true
		}
	}
	if mint != nil && (sizeOK || typeOK || stateOK) {
		return *mint, true
	}
	return pubkey{}, false
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
func programAccountsParams(params json.RawMessage) (pubkey, programAccountsConfig, *rpcError) {
	var cfg programAccountsConfig
	ps, e := positional(params, 1, 2)
	if e != nil {
		return pubkey{}, cfg, e
	}
	program, e := pubkeyParam(ps[0])
	if e != nil {
		return pubkey{}, cfg, e
	}
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return pubkey{}, cfg, e
	}
	if e := checkEncoding(cfg.Encoding); e != nil {
		return pubkey{}, cfg, e
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

	var sets []holderView
	if program == tokenProgramKey || program == token2022ProgramKey {
		mint, indexed := mintIndexKey(program, fs)
		s.mu.RLock()
		switch {
		case indexed:
			if tok, ok := s.tokens[mint]; ok && tok.holders.program.ID() == program.String() {
				sets = append(sets, s.holdersSeen(ctx, tok))
			}
		case s.fullIndexes:
			for _, tok := range s.tokens {
				if tok.holders.program.ID() == program.String() {
					sets = append(sets, s.holdersSeen(ctx, tok))
				}
			}
		}
		s.mu.RUnlock()
		if !indexed && !s.fullIndexes {
			return nil, excludedError(program.String())
		}
		sort.Slice(sets, func(a, b int) bool { return bytes.Compare(sets[a].mint[:], sets[b].mint[:]) < 0 })
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
func streamAccounts(ctx context.Context, o *out, sets []holderView, fs []filter, slice *dataSlice, enc, owner string, flushEvery, hide int) error {
	if err := o.WriteByte('['); err != nil {
		return err
	}
	var (
		raw     [tokenAccountLen + 5]byte
		item    = make([]byte, 0, 512)
		first   = true
		pending = 0
	)
	for _, hs := range sets {
		for i := min(hide, hs.total); i < hs.total; i++ {
			a, open := hs.account(i)
			if !open {
				continue
			}
			data := hs.data(&a, raw[:])
			if !matchAll(fs, data) {
				continue
			}
			item = item[:0]
			if !first {
				item = append(item, ',')
			}
			first = false
			item = appendKeyedAccount(item, &a.address, data, slice, enc, owner)
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
func appendKeyedAccount(item []byte, address *pubkey, data []byte, slice *dataSlice, enc, owner string) []byte {
	item = appendKeyedHead(item, address, len(data))
	item, _ = appendEncodedData(item, slice.apply(data), enc)
	return appendKeyedTail(item, owner, len(data))
}

// appendKeyedHead appends a keyed account up to its "data" value.
func appendKeyedHead(item []byte, address *pubkey, space int) []byte {
	item = append(item, `{"pubkey":"`...)
	item = appendBase58Key(item, address)
	item = append(item, `","account":{"lamports":`...)
	item = strconv.AppendUint(item, rentExempt(space), 10)
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

const b58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// appendBase58Key appends the base58 form of a 32-byte key without
// allocating.
func appendBase58Key(dst []byte, k *pubkey) []byte {
	var digits [44]byte // 32 bytes need at most 44 base58 digits
	n := 0
	for _, b := range k {
		carry := int(b)
		for j := 0; j < n; j++ {
			carry += int(digits[j]) << 8
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits[n] = byte(carry % 58)
			n++
			carry /= 58
		}
	}
	for _, b := range k {
		if b != 0 {
			break
		}
		dst = append(dst, '1')
	}
	for j := n - 1; j >= 0; j-- {
		dst = append(dst, b58Alphabet[digits[j]])
	}
	return dst
}
