package solanasim

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// key returns a deterministic valid address for name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return base58.Encode(h[:])
}

var (
	classicMint = key("classic-mint")
	t22Mint     = key("t22-mint")
	authority   = key("authority")
)

func classicToken(n int) Token {
	return Token{
		Mint: classicMint, Program: ProgramToken, Decimals: 9,
		Supply:        999_999_999_123_456_789,
		MintAuthority: "", FreezeAuthority: authority,
		Metadata: MetadataMetaplex, Name: "Demo Token", Symbol: "DEMO",
		URI: "https://example.org/demo.json", UpdateAuthority: authority,
		Holders: Holders{Accounts: n, Seed: 7, MultiAccountShare: 0.3, ZeroShare: 0.1},
	}
}

func t22Token(n int) Token {
	return Token{
		Mint: t22Mint, Program: ProgramToken2022, Decimals: 6,
		Supply:        5_000_000_000_000_000,
		MintAuthority: authority,
		Metadata:      MetadataToken2022, Name: "Twenty Two", Symbol: "TT",
		URI: "https://example.org/tt.json", UpdateAuthority: authority,
		AdditionalMetadata: [][2]string{{"site", "https://example.org"}},
		Holders:            Holders{Accounts: n, Seed: 9, MultiAccountShare: 0.5, AccountsPerOwner: 4, ZeroShare: 0.2, ExtendedShare: 0.6},
	}
}

// start runs a server with both tokens and returns it and its URL.
func start(t testing.TB, n int, opts ...Option) (*Server, string) {
	t.Helper()
	s := New(opts...)
	if err := s.AddToken(classicToken(n)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddToken(t22Token(n)); err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

// holdersNow is mint's holder set now, read from s's ledger.
func holdersNow(t testing.TB, s *Server, mint string) ledger.HolderView {
	t.Helper()
	k, err := ledger.ParseKey(mint)
	if err != nil {
		t.Fatal(err)
	}
	hv, ok := s.ledger.Holders(k, 0)
	if !ok {
		t.Fatalf("no mint %s", mint)
	}
	return hv
}

// post sends body and returns the status and the (decompressed) body.
func post(t testing.TB, url, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// rpcCall sends one request and decodes the response envelope.
func rpcCall(t testing.TB, url, method string, params any) (result json.RawMessage, rerr *rpcError) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	status, b := post(t, url, string(body))
	if status != 200 {
		t.Fatalf("%s: status %d: %s", method, status, b)
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *rpcError       `json:"error"`
		ID      int             `json:"id"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	if env.JSONRPC != "2.0" || env.ID != 1 {
		t.Fatalf("%s: bad envelope %s", method, b)
	}
	return env.Result, env.Error
}

// shape maps a JSON value to its field names and types.
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = shape(e)
		}
		return m
	case []any:
		if len(x) == 0 {
			return "array"
		}
		return []any{shape(x[0])}
	case nil:
		return "null"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	}
	return "?"
}

// sameShape compares two shapes; "null" matches any type, since documented
// fields such as uiAmount or the authorities may be null.
func sameShape(a, b any) bool {
	if a == "null" || b == "null" {
		return true
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameShape(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && sameShape(x[0], y[0])
	}
	return reflect.DeepEqual(a, b)
}

func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

func TestWireShapesMatchDocs(t *testing.T) {
	s, url := start(t, 50)
	s.SetUnhealthy(42)
	cases := []struct {
		fixture string
		body    string
	}{
		{"getTokenSupply.json", `{"jsonrpc":"2.0","id":1,"method":"getTokenSupply","params":["` + classicMint + `",{"commitment":"confirmed"}]}`},
		{"getAccountInfo_base64.json", `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["` + classicMint + `",{"encoding":"base64"}]}`},
		{"getAccountInfo_jsonParsed_mint.json", `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["` + classicMint + `",{"encoding":"jsonParsed"}]}`},
		{"getTokenLargestAccounts.json", `{"jsonrpc":"2.0","id":1,"method":"getTokenLargestAccounts","params":["` + classicMint + `"]}`},
		{"getProgramAccounts.json", `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + TokenProgramID + `",{"encoding":"base64","filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}`},
		{"getProgramAccounts_withContext.json", `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + TokenProgramID + `",{"encoding":"base64","withContext":true,"filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}`},
		{"getTokenAccounts.json", `{"jsonrpc":"2.0","id":"1","method":"getTokenAccounts","params":{"mint":"` + classicMint + `","limit":100}}`},
		{"getHealth_unhealthy.json", `{"jsonrpc":"2.0","id":1,"method":"getHealth"}`},
		{"getVersion.json", `{"jsonrpc":"2.0","id":1,"method":"getVersion"}`},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", c.fixture))
			if err != nil {
				t.Fatal(err)
			}
			status, got := post(t, url, c.body)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			ws, gs := shape(decodeAny(t, want)), shape(decodeAny(t, got))
			if !sameShape(ws, gs) {
				t.Errorf("shape mismatch\nwant %v\ngot  %v\nbody %.600s", ws, gs, got)
			}
		})
	}
	s.SetHealthy()
	want, _ := os.ReadFile("testdata/getHealth.json")
	if _, got := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"getHealth"}`); !bytes.Equal(bytes.TrimSpace(want), got) {
		t.Errorf("getHealth = %s, want %s", got, want)
	}
}

func TestGetAccountInfoEncodings(t *testing.T) {
	s, url := start(t, 10)
	// Token-2022 jsonParsed with extensions.
	res, rerr := rpcCall(t, url, "getAccountInfo", []any{t22Mint, map[string]any{"encoding": "jsonParsed"}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var v struct {
		Value struct {
			Data struct {
				Program string `json:"program"`
				Parsed  struct {
					Type string `json:"type"`
					Info struct {
						MintAuthority   *string `json:"mintAuthority"`
						FreezeAuthority *string `json:"freezeAuthority"`
						Supply          string  `json:"supply"`
						Extensions      []struct {
							Extension string         `json:"extension"`
							State     map[string]any `json:"state"`
						} `json:"extensions"`
					} `json:"info"`
				} `json:"parsed"`
				Space int `json:"space"`
			} `json:"data"`
			Owner string `json:"owner"`
		} `json:"value"`
	}
	if err := json.Unmarshal(res, &v); err != nil {
		t.Fatal(err)
	}
	d := v.Value.Data
	if d.Program != "spl-token-2022" || d.Parsed.Type != "mint" || d.Parsed.Info.FreezeAuthority != nil ||
		d.Parsed.Info.MintAuthority == nil || *d.Parsed.Info.MintAuthority != authority || v.Value.Owner != Token2022ProgramID {
		t.Errorf("parsed mint = %s", res)
	}
	if len(d.Parsed.Info.Extensions) != 2 || d.Parsed.Info.Extensions[0].Extension != "metadataPointer" ||
		d.Parsed.Info.Extensions[1].Extension != "tokenMetadata" || d.Parsed.Info.Extensions[1].State["name"] != "Twenty Two" ||
		d.Parsed.Info.Extensions[0].State["metadataAddress"] != t22Mint {
		t.Errorf("extensions = %s", res)
	}
	// Unknown account: value null.
	res, rerr = rpcCall(t, url, "getAccountInfo", []any{key("nobody"), map[string]any{"encoding": "base64"}})
	if rerr != nil || !strings.Contains(string(res), `"value":null`) {
		t.Errorf("unknown account = %s %v", res, rerr)
	}
	// dataSlice and base58.
	res, rerr = rpcCall(t, url, "getAccountInfo", []any{classicMint, map[string]any{"encoding": "base58", "dataSlice": map[string]int{"offset": 36, "length": 8}}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var sl struct {
		Value struct{ Data []string } `json:"value"`
	}
	_ = json.Unmarshal(res, &sl)
	raw, _ := base58.Decode(sl.Value.Data[0])
	if len(raw) != 8 || binary.LittleEndian.Uint64(raw) != 999_999_999_123_456_789 || sl.Value.Data[1] != "base58" {
		t.Errorf("sliced = %s", res)
	}
	// Bad encodings and params.
	for _, p := range []any{
		[]any{classicMint, map[string]any{"encoding": "base64+zstd"}},
		[]any{classicMint, map[string]any{"encoding": "hex"}},
		[]any{classicMint, map[string]any{"bogus": 1}},
		[]any{"not-base58-0OIl"},
		[]any{},
		[]any{classicMint, map[string]any{"commitment": "soon"}},
		[]any{classicMint, map[string]any{"dataSlice": map[string]int{"offset": -1, "length": 1}}},
	} {
		if _, rerr := rpcCall(t, url, "getAccountInfo", p); rerr == nil || rerr.Code != CodeInvalidParams {
			t.Errorf("params %v: error %v, want -32602", p, rerr)
		}
	}
	_ = s
}

func TestTokenSupplyCommitmentAndMutations(t *testing.T) {
	s, url := start(t, 10)
	slot := s.Slot()
	for c, want := range map[string]uint64{"processed": slot, "confirmed": slot - 1, "finalized": slot - 32} {
		res, rerr := rpcCall(t, url, "getTokenSupply", []any{classicMint, map[string]string{"commitment": c}})
		if rerr != nil {
			t.Fatal(rerr)
		}
		var v withCtx
		_ = json.Unmarshal(res, &v)
		if v.Context.Slot != want {
			t.Errorf("%s: slot %d, want %d", c, v.Context.Slot, want)
		}
	}
	res, _ := rpcCall(t, url, "getTokenSupply", []any{classicMint})
	if !strings.Contains(string(res), `"amount":"999999999123456789","decimals":9,"uiAmount":999999999.1234567,"uiAmountString":"999999999.123456789"`) {
		t.Errorf("supply = %s", res)
	}
	if _, rerr := rpcCall(t, url, "getTokenSupply", []any{key("nobody")}); rerr == nil || rerr.Message != "Invalid param: could not find account" {
		t.Errorf("unknown mint: %v", rerr)
	}
	if _, rerr := rpcCall(t, url, "getTokenSupply", []any{classicMint, map[string]uint64{"minContextSlot": slot + 100}}); rerr == nil || rerr.Code != CodeMinContextSlotNotOK {
		t.Errorf("minContextSlot: %v", rerr)
	}
	if err := s.SetSupply(classicMint, 1000_000_000_000); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMintAuthority(classicMint, authority); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFreezeAuthority(classicMint, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSupply(key("nobody"), 1); err == nil {
		t.Error("SetSupply of an unknown mint succeeded")
	}
	res, _ = rpcCall(t, url, "getAccountInfo", []any{classicMint, map[string]string{"encoding": "jsonParsed"}})
	if !strings.Contains(string(res), `"mintAuthority":"`+authority+`","supply":"1000000000000","decimals":9,"isInitialized":true,"freezeAuthority":null`) {
		t.Errorf("after mutations = %s", res)
	}
	// Each of the three changes landed in a slot of its own.
	if got := s.BumpSlot(10); got != slot+3+10 {
		t.Errorf("BumpSlot = %d, want %d", got, slot+13)
	}
	res, _ = rpcCall(t, url, "getSlot", []any{map[string]string{"commitment": "processed"}})
	if string(res) != "300000013" {
		t.Errorf("getSlot = %s", res)
	}
	res, _ = rpcCall(t, url, "getLatestBlockhash", nil)
	if !strings.Contains(string(res), `"blockhash":"`) || !strings.Contains(string(res), `"lastValidBlockHeight":`) {
		t.Errorf("getLatestBlockhash = %s", res)
	}
	s.SetUnhealthy(0)
	if _, rerr := rpcCall(t, url, "getHealth", nil); rerr == nil || rerr.Code != CodeNodeUnhealthy || rerr.Message != "Node is unhealthy" {
		t.Errorf("unhealthy: %v", rerr)
	}
}

// gpaOwners runs getProgramAccounts with the holders dataSlice and returns
// the summed balance per owner, plus the number of accounts.
func gpaOwners(t *testing.T, url, program string, filters []any, sums map[string]uint64) int {
	t.Helper()
	res, rerr := rpcCall(t, url, "getProgramAccounts", []any{program, map[string]any{
		"encoding": "base64", "dataSlice": map[string]int{"offset": 32, "length": 40}, "filters": filters,
	}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var items []struct {
		Account struct {
			Data []string `json:"data"`
		} `json:"account"`
	}
	if err := json.Unmarshal(res, &items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		b, err := base64.StdEncoding.DecodeString(it.Account.Data[0])
		if err != nil || len(b) != 40 {
			t.Fatalf("slice %q: %v", it.Account.Data[0], err)
		}
		sums[base58.Encode(b[:32])] += binary.LittleEndian.Uint64(b[32:40])
	}
	return len(items)
}

func countPositive(m map[string]uint64) int {
	n := 0
	for _, v := range m {
		if v > 0 {
			n++
		}
	}
	return n
}

func TestProgramAccountsHolderCount(t *testing.T) {
	s, url := start(t, 2500)
	// Classic: dataSize 165 + memcmp mint.
	sums := map[string]uint64{}
	n := gpaOwners(t, url, TokenProgramID, []any{map[string]any{"dataSize": 165}, map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": classicMint}}}, sums)
	truth, _ := s.Truth(classicMint)
	if n != truth.TokenAccounts || countPositive(sums) != truth.Holders {
		t.Errorf("classic: %d accounts, %d holders; truth %+v", n, countPositive(sums), truth)
	}
	// Token-2022: dataSize 165 alone misses the 170-byte accounts; the union
	// with memcmp [2]@165 finds everyone.
	sums = map[string]uint64{}
	mintF := map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": t22Mint}}
	n165 := gpaOwners(t, url, Token2022ProgramID, []any{map[string]any{"dataSize": 165}, mintF}, sums)
	truth, _ = s.Truth(t22Mint)
	if n165 != truth.Accounts165 {
		t.Errorf("dataSize 165: %d accounts, want %d", n165, truth.Accounts165)
	}
	typeF := map[string]any{"memcmp": map[string]any{"offset": 165, "bytes": base58.Encode([]byte{2})}}
	n170 := gpaOwners(t, url, Token2022ProgramID, []any{mintF, typeF}, sums)
	if n170 != truth.Accounts170 || countPositive(sums) != truth.Holders {
		t.Errorf("token-2022: %d+%d accounts, %d holders; truth %+v", n165, n170, countPositive(sums), truth)
	}
	// Same with base64 memcmp bytes.
	sums = map[string]uint64{}
	typeB64 := map[string]any{"memcmp": map[string]any{"offset": 165, "bytes": "Ag==", "encoding": "base64"}}
	if got := gpaOwners(t, url, Token2022ProgramID, []any{mintF, typeB64}, sums); got != truth.Accounts170 {
		t.Errorf("base64 memcmp: %d", got)
	}
	// Unknown mint through the index: empty list.
	if got := gpaOwners(t, url, TokenProgramID, []any{map[string]any{"dataSize": 165}, map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": key("x")}}}, map[string]uint64{}); got != 0 {
		t.Errorf("unknown mint: %d accounts", got)
	}
}

func TestProgramAccountsErrorsAndOptions(t *testing.T) {
	_, url := start(t, 100)
	mintF := map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": classicMint}}
	// Not served by the mint index: -32010.
	for _, fs := range []any{[]any{mintF}, []any{map[string]any{"dataSize": 165}}, nil} {
		_, rerr := rpcCall(t, url, "getProgramAccounts", []any{TokenProgramID, map[string]any{"encoding": "base64", "filters": fs}})
		if rerr == nil || rerr.Code != CodeKeyExcludedFromIdx || rerr.Message != TokenProgramID+" excluded from account secondary indexes; this RPC method unavailable for key" {
			t.Errorf("filters %v: %v", fs, rerr)
		}
	}
	bad := [][]any{
		{TokenProgramID, map[string]any{"encoding": "base64+zstd", "filters": []any{mintF}}},
		{TokenProgramID, map[string]any{"filters": []any{mintF, map[string]any{"dataSize": 165}}}}, // base58 of 165 bytes
		{TokenProgramID, map[string]any{"encoding": "base64", "filters": []any{mintF, mintF, mintF, mintF, mintF}}},
		{TokenProgramID, map[string]any{"encoding": "base64", "filters": []any{map[string]any{"memcmp": map[string]any{"offset": 0, "bytes": "0OIl"}}}}},
		{TokenProgramID, map[string]any{"encoding": "base64", "filters": []any{map[string]any{"dataSize": 1, "memcmp": map[string]any{"offset": 0, "bytes": "1"}}}}},
		{TokenProgramID, map[string]any{"encoding": "jsonParsed", "filters": []any{mintF, map[string]any{"dataSize": 165}}}},
	}
	for _, p := range bad {
		if _, rerr := rpcCall(t, url, "getProgramAccounts", p); rerr == nil || rerr.Code != CodeInvalidParams {
			t.Errorf("%v: %v, want -32602", p, rerr)
		}
	}
	// withContext, and a gzip stream.
	body := `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + TokenProgramID +
		`",{"encoding":"base64","withContext":true,"dataSlice":{"offset":64,"length":8},"filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: no transparent decoding
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Result struct {
			Context rpcContext `json:"context"`
			Value   []struct {
				Pubkey  string `json:"pubkey"`
				Account struct {
					Data  []string `json:"data"`
					Space int      `json:"space"`
				} `json:"account"`
			} `json:"value"`
		} `json:"result"`
	}
	if err := json.NewDecoder(zr).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if env.Result.Context.Slot == 0 || len(env.Result.Value) != 100 || env.Result.Value[0].Account.Space != 165 {
		t.Fatalf("withContext result: %+v", env.Result.Context)
	}
	b, _ := base64.StdEncoding.DecodeString(env.Result.Value[0].Account.Data[0])
	if len(b) != 8 {
		t.Errorf("dataSlice gave %d bytes", len(b))
	}
	// Full indexes: the mint memcmp alone is served by a scan.
	s2 := New(WithFullIndexes())
	if err := s2.AddToken(classicToken(10)); err != nil {
		t.Fatal(err)
	}
	url2, err := s2.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := gpaOwners(t, url2, TokenProgramID, []any{mintF}, map[string]uint64{}); n != 10 {
		t.Errorf("full index scan: %d accounts", n)
	}
}

func TestLargestAccounts(t *testing.T) {
	s, url := start(t, 500)
	res, rerr := rpcCall(t, url, "getTokenLargestAccounts", []any{classicMint})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var v struct {
		Value []struct {
			Address string `json:"address"`
			Amount  string `json:"amount"`
		} `json:"value"`
	}
	_ = json.Unmarshal(res, &v)
	want, _ := s.Largest(classicMint)
	if len(v.Value) != 20 || len(want) != 20 {
		t.Fatalf("got %d entries", len(v.Value))
	}
	// Brute force the maximum.
	hs := holdersNow(t, s, classicMint)
	var maxAmt uint64
	for i := range hs.Total() {
		maxAmt = max(maxAmt, hs.State(i).Amount)
	}
	if v.Value[0].Address != want[0].Address || v.Value[0].Amount != uintStr(maxAmt) {
		t.Errorf("largest = %+v, max %d", v.Value[0], maxAmt)
	}
}

func uintStr(v uint64) string { b, _ := json.Marshal(v); return string(b) }

func TestDASPagination(t *testing.T) {
	s, url := start(t, 2345)
	truth, _ := s.Truth(classicMint)
	owners := map[string]uint64{}
	cursor, pages, accounts, big := "", 0, 0, 0
	for {
		params := map[string]any{"mint": classicMint, "limit": 1000}
		if cursor != "" {
			params["cursor"] = cursor
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "x", "method": "getTokenAccounts", "params": params})
		_, raw := post(t, url, string(body))
		var env struct {
			Result struct {
				Total         int    `json:"total"`
				Limit         int    `json:"limit"`
				Cursor        string `json:"cursor"`
				TokenAccounts []struct {
					Owner  string      `json:"owner"`
					Amount json.Number `json:"amount"`
				} `json:"token_accounts"`
			} `json:"result"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&env); err != nil {
			t.Fatal(err)
		}
		r := env.Result
		if r.Total != len(r.TokenAccounts) || r.Limit != 1000 {
			t.Fatalf("page: total %d, %d accounts, limit %d", r.Total, len(r.TokenAccounts), r.Limit)
		}
		if len(r.TokenAccounts) == 0 {
			if r.Cursor != "" {
				t.Error("empty page carries a cursor")
			}
			break
		}
		pages++
		for _, a := range r.TokenAccounts {
			lit := a.Amount.String()
			if strings.ContainsAny(lit, ".eE") {
				t.Fatalf("amount %s is not an integer literal", lit)
			}
			var amt uint64
			if err := json.Unmarshal([]byte(lit), &amt); err != nil {
				t.Fatal(err)
			}
			if amt > 1<<53 {
				big++
			}
			owners[a.Owner] += amt
			accounts++
		}
		cursor = r.Cursor
	}
	if pages != 3 || accounts != truth.NonZeroAccounts || countPositive(owners) != truth.Holders || big == 0 {
		t.Errorf("pages %d, accounts %d, holders %d, >2^53: %d; truth %+v", pages, accounts, countPositive(owners), big, truth)
	}
	// Page mode with zero balances.
	res, rerr := rpcCall(t, url, "getTokenAccounts", map[string]any{"mint": classicMint, "page": 3, "limit": 1000, "options": map[string]bool{"showZeroBalance": true}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var pg struct {
		Page          int   `json:"page"`
		TokenAccounts []any `json:"token_accounts"`
	}
	_ = json.Unmarshal(res, &pg)
	if pg.Page != 3 || len(pg.TokenAccounts) != 345 {
		t.Errorf("page 3: page %d, %d accounts", pg.Page, len(pg.TokenAccounts))
	}
	// Owner filter.
	hs := holdersNow(t, s, classicMint)
	a, _ := hs.Account(0)
	res, _ = rpcCall(t, url, "getTokenAccounts", map[string]any{"owner": a.Owner.String(), "mint": classicMint})
	if !strings.Contains(string(res), a.Address.String()) {
		t.Errorf("owner filter: %s", res)
	}
	for _, p := range []any{
		map[string]any{"mint": classicMint, "limit": 1001},
		map[string]any{"mint": classicMint, "cursor": "x0"},
		map[string]any{"limit": 10},
		[]any{classicMint},
	} {
		if _, rerr := rpcCall(t, url, "getTokenAccounts", p); rerr == nil || rerr.Code != CodeInvalidParams {
			t.Errorf("%v: %v", p, rerr)
		}
	}
}

// TestKeyEchoFault: the node refuses the caller's key and quotes it bare,
// URL-encoded and inside a URL, wherever the caller put it.
func TestKeyEchoFault(t *testing.T) {
	s, base := start(t, 10)
	const odd = "k3y/with+odd=chars"
	for _, tc := range []struct{ url, key string }{
		{base + "/?api-key=" + url.QueryEscape(odd), odd},
		{base + "/v2/AbCdEf0123456789xyz", "AbCdEf0123456789xyz"},
	} {
		s.Faults().Inject("*", fault.Fault{Kind: fault.RPCKeyEcho, Times: 1})
		_, rerr := rpcCall(t, tc.url, "getSlot", nil)
		if rerr == nil || rerr.Code != CodeKeyNotAllowed {
			t.Fatalf("%s: error %+v", tc.url, rerr)
		}
		for _, form := range []string{"api key " + tc.key + " ", url.QueryEscape(tc.key), "/keys/" + url.PathEscape(tc.key) + "/getSlot"} {
			if !strings.Contains(rerr.Message, form) {
				t.Errorf("%s: message %q does not quote %q", tc.url, rerr.Message, form)
			}
		}
		if _, rerr := rpcCall(t, tc.url, "getSlot", nil); rerr != nil {
			t.Errorf("the fault outlived its one request: %+v", rerr)
		}
	}
}

// TestOneStatePerSlot: answers at one context slot show one state, while
// the ledger changes as fast as it can. A slot read before a change and
// the state after it once paired two supplies with one slot (the supply
// collector, which compares getTokenSupply with the mint account at one
// slot, refused them as a node that cannot be trusted).
func TestOneStatePerSlot(t *testing.T) {
	s, url := start(t, 10)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for supply := uint64(1_000_000); ; supply++ {
			select {
			case <-done:
				return
			default:
			}
			if err := s.SetSupply(classicMint, supply); err != nil {
				t.Error(err)
				return
			}
			// Several answers per slot, as a collector's reads of one
			// poll are.
			time.Sleep(300 * time.Microsecond)
		}
	}()
	seen := map[uint64]string{}
	processed := map[string]string{"commitment": "processed"}
	parsed := map[string]string{"commitment": "processed", "encoding": "jsonParsed"}
	for i := range 2000 {
		var slot uint64
		var supply string
		if i%2 == 0 {
			res, rerr := rpcCall(t, url, "getTokenSupply", []any{classicMint, processed})
			if rerr != nil {
				t.Fatal(rerr)
			}
			var v struct {
				Context rpcContext `json:"context"`
				Value   struct {
					Amount string `json:"amount"`
				} `json:"value"`
			}
			if err := json.Unmarshal(res, &v); err != nil {
				t.Fatal(err)
			}
			slot, supply = v.Context.Slot, v.Value.Amount
		} else {
			res, rerr := rpcCall(t, url, "getAccountInfo", []any{classicMint, parsed})
			if rerr != nil {
				t.Fatal(rerr)
			}
			var v struct {
				Context rpcContext `json:"context"`
				Value   struct {
					Data struct {
						Parsed struct {
							Info struct {
								Supply string `json:"supply"`
							} `json:"info"`
						} `json:"parsed"`
					} `json:"data"`
				} `json:"value"`
			}
			if err := json.Unmarshal(res, &v); err != nil {
				t.Fatal(err)
			}
			slot, supply = v.Context.Slot, v.Value.Data.Parsed.Info.Supply
		}
		if before, ok := seen[slot]; ok && before != supply {
			t.Fatalf("slot %d answered supply %s and %s", slot, before, supply)
		}
		seen[slot] = supply
	}
	close(done)
	wg.Wait()
}
