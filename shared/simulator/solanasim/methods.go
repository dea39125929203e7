package solanasim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// maxRentEpoch is the rentEpoch of a rent-exempt account (u64::MAX).
const maxRentEpoch = "18446744073709551615"

// Slots behind the processed slot for each commitment.
const (
	confirmedLag = 1
	finalizedLag = 32
)

// positional splits JSON-RPC array params, checking their count.
func positional(raw json.RawMessage, minN, maxN int) ([]json.RawMessage, *rpcError) {
	var ps []json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		ps = nil
	} else if err := json.Unmarshal(raw, &ps); err != nil {
		return nil, invalidParams("Invalid params: invalid type: expected a sequence.")
	}
	if len(ps) < minN {
		return nil, invalidParams(fmt.Sprintf("`params` should have at least %d argument(s)", minN))
	}
	if len(ps) > maxN {
		return nil, invalidParams(fmt.Sprintf("Invalid params: invalid length %d, expected at most %d elements.", len(ps), maxN))
	}
	return ps, nil
}

// decodeConfig decodes an optional config object strictly (unknown fields
// are an error, as with the node's serde structs).
func decodeConfig(ps []json.RawMessage, i int, v any) *rpcError {
	if len(ps) <= i || bytes.Equal(bytes.TrimSpace(ps[i]), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(ps[i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidParams("Invalid params: " + strings.TrimPrefix(err.Error(), "json: ") + ".")
	}
	return nil
}

func pubkeyParam(raw json.RawMessage) (ledger.Key, *rpcError) {
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return ledger.Key{}, invalidParams("Invalid params: invalid type: expected a string.")
	}
	b, err := base58.Decode(str)
	if err != nil {
		return ledger.Key{}, invalidParams("Invalid param: Invalid")
	}
	if len(b) != 32 {
		return ledger.Key{}, invalidParams("Invalid param: WrongSize")
	}
	var p ledger.Key
	copy(p[:], b)
	return p, nil
}

// commitmentConfig is the part shared by most configs.
type commitmentConfig struct {
	Commitment     *string `json:"commitment"`
	MinContextSlot *uint64 `json:"minContextSlot"`
}

// contextSlot returns the slot seen at the requested commitment.
func (s *Server) contextSlot(ctx context.Context, c commitmentConfig) (uint64, *rpcError) {
	return contextSlotAt(s.ledger.Slot(), viewOf(ctx), c)
}

// contextSlotAt is the slot the node of v sees at c's commitment when the
// ledger is at slot now.
func contextSlotAt(slot uint64, v view, c commitmentConfig) (uint64, *rpcError) {
	slot -= min(v.lag, slot)
	lag, e := commitmentLag(c.Commitment)
	if e != nil {
		return 0, e
	}
	if slot > lag {
		slot -= lag
	}
	if c.MinContextSlot != nil && slot < *c.MinContextSlot {
		return 0, &rpcError{Code: CodeMinContextSlotNotOK, Message: "Minimum context slot has not been reached", Data: map[string]uint64{"contextSlot": slot}}
	}
	return slot, nil
}

// commitmentLag is how many slots behind the processed one a commitment
// answers (nil: finalized).
func commitmentLag(commitment *string) (uint64, *rpcError) {
	if commitment == nil {
		return finalizedLag, nil
	}
	switch *commitment {
	case "processed", "recent", "single", "singleGossip":
		return 0, nil
	case "confirmed":
		return confirmedLag, nil
	case "finalized", "max", "root":
		return finalizedLag, nil
	}
	return 0, invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`, expected one of `processed`, `confirmed`, `finalized`.", *commitment))
}

type rpcContext struct {
	APIVersion string `json:"apiVersion"`
	Slot       uint64 `json:"slot"`
}

type withCtx struct {
	Context rpcContext `json:"context"`
	Value   any        `json:"value"`
}

func (s *Server) wrap(slot uint64, v any) resultFunc {
	return jsonResult(withCtx{rpcContext{s.version, slot}, v})
}

func jsonResult(v any) resultFunc { return func(o *out) error { return o.json(v) } }

func (s *Server) getHealth(_ context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	if _, e := positional(params, 0, 0); e != nil {
		return nil, e
	}
	if s.unhealthy.Load() {
		return nil, s.unhealthyError()
	}
	return jsonResult("ok"), nil
}

func (s *Server) getSlot(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	ps, e := positional(params, 0, 1)
	if e != nil {
		return nil, e
	}
	var cfg commitmentConfig
	if e := decodeConfig(ps, 0, &cfg); e != nil {
		return nil, e
	}
	slot, e := s.contextSlot(ctx, cfg)
	if e != nil {
		return nil, e
	}
	return jsonResult(slot), nil
}

func (s *Server) getVersion(_ context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	if _, e := positional(params, 0, 0); e != nil {
		return nil, e
	}
	return jsonResult(map[string]any{"solana-core": s.version, "feature-set": uint32(3294202862)}), nil
}

func (s *Server) getLatestBlockhash(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	ps, e := positional(params, 0, 1)
	if e != nil {
		return nil, e
	}
	var cfg commitmentConfig
	if e := decodeConfig(ps, 0, &cfg); e != nil {
		return nil, e
	}
	slot, e := s.contextSlot(ctx, cfg)
	if e != nil {
		return nil, e
	}
	h := sha256.Sum256(binary.LittleEndian.AppendUint64([]byte("blockhash"), slot))
	height := slot - slot/20 // some slots are skipped
	return s.wrap(slot, map[string]any{"blockhash": base58.Encode(h[:]), "lastValidBlockHeight": height + 150}), nil
}

// tokenAmount is the node's UiTokenAmount.
type tokenAmount struct {
	Amount         string   `json:"amount"`
	Decimals       uint8    `json:"decimals"`
	UIAmount       *float64 `json:"uiAmount"`
	UIAmountString string   `json:"uiAmountString"`
}

func uiAmount(amount uint64, decimals uint8) tokenAmount {
	f := float64(amount) / math.Pow10(int(decimals))
	return tokenAmount{
		Amount:         strconv.FormatUint(amount, 10),
		Decimals:       decimals,
		UIAmount:       &f,
		UIAmountString: decimalString(amount, decimals),
	}
}

// decimalString formats amount with decimals, trimming trailing zeros and
// a trailing point (the node's real_number_string_trimmed).
func decimalString(amount uint64, decimals uint8) string {
	s := strconv.FormatUint(amount, 10)
	if decimals == 0 {
		return s
	}
	d := int(decimals)
	if len(s) <= d {
		s = strings.Repeat("0", d-len(s)+1) + s
	}
	s = s[:len(s)-d] + "." + s[len(s)-d:]
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// lookupMint is mint k's state and holders as the node of ctx sees them,
// with the context slot of cfg's commitment. The slot and the state are
// read under one hold of the ledger's lock (account does the same): a
// change lands with its new slot under the write lock, so no answer pairs
// a slot with the state of another. A slot read before a change and the
// state after it made two answers at one slot disagree, as a real node's
// never do, and the supply collector rightly refused them.
func (s *Server) lookupMint(ctx context.Context, k ledger.Key, cfg commitmentConfig) (uint64, ledger.MintState, ledger.HolderView, *rpcError) {
	v := viewOf(ctx)
	now, st, hv, ok := s.ledger.Mint(k, v.lag)
	slot, e := contextSlotAt(now, v, cfg)
	if e != nil {
		return 0, ledger.MintState{}, ledger.HolderView{}, e
	}
	if !ok {
		return 0, ledger.MintState{}, ledger.HolderView{}, invalidParams("Invalid param: could not find account")
	}
	return slot, v.skew(st), hv, nil
}

func (s *Server) getTokenSupply(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	ps, e := positional(params, 1, 2)
	if e != nil {
		return nil, e
	}
	k, e := pubkeyParam(ps[0])
	if e != nil {
		return nil, e
	}
	var cfg commitmentConfig
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return nil, e
	}
	slot, st, _, e := s.lookupMint(ctx, k, cfg)
	if e != nil {
		return nil, e
	}
	return s.wrap(slot, uiAmount(st.Supply, st.Decimals)), nil
}

func (s *Server) getTokenLargestAccounts(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	ps, e := positional(params, 1, 2)
	if e != nil {
		return nil, e
	}
	k, e := pubkeyParam(ps[0])
	if e != nil {
		return nil, e
	}
	var cfg commitmentConfig
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return nil, e
	}
	slot, st, hs, e := s.lookupMint(ctx, k, cfg)
	if e != nil {
		return nil, e
	}
	largest := hs.Largest()
	type entry struct {
		Address string `json:"address"`
		tokenAmount
	}
	list := make([]entry, len(largest))
	for i, b := range largest {
		list[i] = entry{b.Address, uiAmount(b.Amount, st.Decimals)}
	}
	return s.wrap(slot, list), nil
}

// dataSlice is the node's UiDataSliceConfig.
type dataSlice struct {
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

func (d *dataSlice) apply(b []byte) []byte {
	if d == nil {
		return b
	}
	n := uint64(len(b))
	if d.Offset >= n {
		return b[:0]
	}
	return b[d.Offset : d.Offset+min(d.Length, n-d.Offset)]
}

const maxBase58Bytes = 128

var errBase58TooLarge = invalidParams("Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")

// checkEncoding validates an encoding name ("" is the legacy binary).
func checkEncoding(enc string) *rpcError {
	switch enc {
	case "", "binary", "base58", "base64", "jsonParsed":
		return nil
	case "base64+zstd":
		return invalidParams("Invalid params: encoding base64+zstd is not supported by this node; use base64.")
	}
	return invalidParams(fmt.Sprintf("Invalid params: unknown variant `%s`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`.", enc))
}

// appendEncodedData appends the JSON "data" value of an account.
func appendEncodedData(dst []byte, data []byte, enc string) ([]byte, *rpcError) {
	switch enc {
	case "", "binary":
		if len(data) > maxBase58Bytes {
			return dst, errBase58TooLarge
		}
		dst = append(dst, '"')
		dst = append(dst, base58.Encode(data)...)
		return append(dst, '"'), nil
	case "base58":
		if len(data) > maxBase58Bytes {
			return dst, errBase58TooLarge
		}
		dst = append(dst, `["`...)
		dst = append(dst, base58.Encode(data)...)
		return append(dst, `","base58"]`...), nil
	default: // base64, and jsonParsed's fallback
		dst = append(dst, `["`...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		return append(dst, `","base64"]`...), nil
	}
}

type accountInfoConfig struct {
	commitmentConfig
	Encoding  string     `json:"encoding"`
	DataSlice *dataSlice `json:"dataSlice"`
}

// uiAccount is the node's UiAccount, in its field order.
type uiAccount struct {
	Lamports   uint64          `json:"lamports"`
	Data       json.RawMessage `json:"data"`
	Owner      string          `json:"owner"`
	Executable bool            `json:"executable"`
	RentEpoch  json.RawMessage `json:"rentEpoch"`
	Space      int             `json:"space"`
}

func (s *Server) getAccountInfo(ctx context.Context, params json.RawMessage) (resultFunc, *rpcError) {
	ps, e := positional(params, 1, 2)
	if e != nil {
		return nil, e
	}
	k, e := pubkeyParam(ps[0])
	if e != nil {
		return nil, e
	}
	var cfg accountInfoConfig
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return nil, e
	}
	if e := checkEncoding(cfg.Encoding); e != nil {
		return nil, e
	}
	slot, acc, e := s.account(ctx, k, cfg)
	if e != nil {
		return nil, e
	}
	if acc == nil {
		return s.wrap(slot, nil), nil
	}
	return s.wrap(slot, acc), nil
}

// account is account k as the node of ctx sees it at the context slot of
// cfg's commitment, encoded as cfg asks (nil when the account does not
// exist): getAccountInfo's value and accountNotification's, with that
// slot.
func (s *Server) account(ctx context.Context, k ledger.Key, cfg accountInfoConfig) (uint64, *uiAccount, *rpcError) {
	v := viewOf(ctx)
	now, st, kind := s.ledger.Account(k, v.lag)
	slot, e := contextSlotAt(now, v, cfg.commitmentConfig)
	if e != nil {
		return 0, nil, e
	}
	st = v.skew(st)
	var (
		data  []byte
		owner string
	)
	switch kind {
	case ledger.MintAccount:
		data, owner = st.MintData(), st.Program.ID()
	case ledger.MetadataAccount:
		data, owner = st.MetaplexData(), MetadataProgramID
	default:
		return slot, nil, nil
	}
	acc := uiAccount{
		Lamports:  ledger.RentExempt(len(data)),
		Owner:     owner,
		RentEpoch: json.RawMessage(maxRentEpoch),
		Space:     len(data),
	}
	if cfg.Encoding == "jsonParsed" && kind == ledger.MintAccount {
		b, err := json.Marshal(parsedMint(&st, len(data)))
		if err != nil {
			return 0, nil, &rpcError{Code: -32603, Message: "Internal error"}
		}
		acc.Data = b
	} else {
		b, e := appendEncodedData(nil, cfg.DataSlice.apply(data), cfg.Encoding)
		if e != nil {
			return 0, nil, e
		}
		acc.Data = b
	}
	return slot, &acc, nil
}

func optString(k *ledger.Key) *string {
	if k == nil {
		return nil
	}
	s := (*k).String()
	return &s
}

// parsedMint is the node's jsonParsed form of a mint account.
func parsedMint(st *ledger.MintState, space int) any {
	type extension struct {
		Extension string `json:"extension"`
		State     any    `json:"state"`
	}
	type info struct {
		MintAuthority   *string     `json:"mintAuthority"`
		Supply          string      `json:"supply"`
		Decimals        uint8       `json:"decimals"`
		IsInitialized   bool        `json:"isInitialized"`
		FreezeAuthority *string     `json:"freezeAuthority"`
		Extensions      []extension `json:"extensions,omitempty"`
	}
	in := info{
		MintAuthority:   optString(st.MintAuthority),
		Supply:          strconv.FormatUint(st.Supply, 10),
		Decimals:        st.Decimals,
		IsInitialized:   true,
		FreezeAuthority: optString(st.FreezeAuthority),
	}
	program := "spl-token"
	if st.Program == ProgramToken2022 {
		program = "spl-token-2022"
	}
	if st.Program == ProgramToken2022 && st.Metadata == MetadataToken2022 {
		additional := make([][2]string, len(st.Additional))
		copy(additional, st.Additional)
		in.Extensions = []extension{
			{"metadataPointer", map[string]any{
				"authority":       optString(st.UpdateAuthority),
				"metadataAddress": st.Mint.String(),
			}},
			{"tokenMetadata", map[string]any{
				"updateAuthority":    optString(st.UpdateAuthority),
				"mint":               st.Mint.String(),
				"name":               st.Name,
				"symbol":             st.Symbol,
				"uri":                st.URI,
				"additionalMetadata": additional,
			}},
		}
	}
	return map[string]any{
		"program": program,
		"parsed":  map[string]any{"type": "mint", "info": in},
		"space":   space,
	}
}
