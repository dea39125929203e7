package solanasim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// TestSolanaGoClient decodes the simulator's answers with the real client.
func TestSolanaGoClient(t *testing.T) {
	s, url := start(t, 300)
	cl := rpc.New(url)
	defer cl.Close()
	ctx := context.Background()
	mint := solana.MustPublicKeyFromBase58(classicMint)

	sup, err := cl.GetTokenSupply(ctx, mint, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if sup.Value.Amount != "999999999123456789" || sup.Value.Decimals != 9 || sup.Value.UiAmountString != "999999999.123456789" || sup.Context.Slot != s.Slot()-32 {
		t.Errorf("supply = %+v", sup.Value)
	}

	acc, err := cl.GetAccountInfoWithOpts(ctx, mint, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		t.Fatal(err)
	}
	if !acc.Value.Owner.Equals(solana.TokenProgramID) || acc.Value.Lamports != 1461600 {
		t.Errorf("owner %s lamports %d", acc.Value.Owner, acc.Value.Lamports)
	}
	var m token.Mint
	if err := bin.NewBinDecoder(acc.Value.Data.GetBinary()).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Supply != 999_999_999_123_456_789 || m.Decimals != 9 || !m.IsInitialized || m.MintAuthority != nil ||
		m.FreezeAuthority == nil || m.FreezeAuthority.String() != authority {
		t.Errorf("decoded mint = %+v", m)
	}

	// jsonParsed comes back as raw JSON.
	parsed, err := cl.GetAccountInfoWithOpts(ctx, solana.MustPublicKeyFromBase58(t22Mint), &rpc.GetAccountInfoOpts{Encoding: solana.EncodingJSONParsed})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(parsed.Value.Data.GetRawJSON()), `"tokenMetadata"`) || !parsed.Value.Owner.Equals(solana.Token2022ProgramID) {
		t.Errorf("jsonParsed = %s", parsed.Value.Data.GetRawJSON())
	}

	// Metaplex metadata at the PDA solana-go derives.
	pda, _, err := solana.FindTokenMetadataAddress(mint)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := MetadataAddress(classicMint); got != pda.String() {
		t.Errorf("MetadataAddress = %s, solana-go %s", got, pda)
	}
	md, err := cl.GetAccountInfo(ctx, pda)
	if err != nil {
		t.Fatal(err)
	}
	if b := md.Value.Data.GetBinary(); len(b) != 679 || b[0] != 4 || !md.Value.Owner.Equals(solana.TokenMetadataProgramID) {
		t.Errorf("metadata account: %d bytes, owner %s", len(b), md.Value.Owner)
	}

	if _, err := cl.GetAccountInfo(ctx, solana.MustPublicKeyFromBase58(key("nobody"))); !errors.Is(err, rpc.ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}

	largest, err := cl.GetTokenLargestAccounts(ctx, mint, rpc.CommitmentFinalized)
	if err != nil || len(largest.Value) != 20 {
		t.Fatalf("largest: %v", err)
	}
	if h, err := cl.GetHealth(ctx); err != nil || h != "ok" {
		t.Errorf("health %q %v", h, err)
	}
	if v, err := cl.GetVersion(ctx); err != nil || v.SolanaCore != "2.2.14" {
		t.Errorf("version %+v %v", v, err)
	}
	if slot, err := cl.GetSlot(ctx, rpc.CommitmentProcessed); err != nil || slot != s.Slot() {
		t.Errorf("slot %d %v", slot, err)
	}
	if bh, err := cl.GetLatestBlockhash(ctx, rpc.CommitmentFinalized); err != nil || bh.Value.Blockhash.IsZero() {
		t.Errorf("blockhash %v", err)
	}

	gpa, err := cl.GetProgramAccountsWithOpts(ctx, solana.TokenProgramID, &rpc.GetProgramAccountsOpts{
		Encoding: solana.EncodingBase64,
		Filters: []rpc.RPCFilter{
			{DataSize: 165},
			{Memcmp: &rpc.RPCFilterMemcmp{Offset: 0, Bytes: mint.Bytes()}},
		},
	})
	if err != nil || len(gpa) != 300 {
		t.Fatalf("getProgramAccounts: %d, %v", len(gpa), err)
	}
	var ta token.Account
	if err := bin.NewBinDecoder(gpa[0].Account.Data.GetBinary()).Decode(&ta); err != nil {
		t.Fatal(err)
	}
	if !ta.Mint.Equals(mint) || ta.State != token.Initialized {
		t.Errorf("token account = %+v", ta)
	}

	s.SetUnhealthy(42)
	_, err = cl.GetHealth(ctx)
	var je *jsonrpc.RPCError
	if !errors.As(err, &je) || je.Code != CodeNodeUnhealthy || je.Message != "Node is behind by 42 slots" {
		t.Errorf("unhealthy: %v", err)
	}
}

// rawPost sends body and returns the response (nil on a transport error).
func rawPost(t *testing.T, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaults(t *testing.T) {
	s, url := start(t, 50)
	supply := `{"jsonrpc":"2.0","id":1,"method":"getTokenSupply","params":["` + classicMint + `"]}`
	gpa := `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + TokenProgramID + `",{"encoding":"base64","filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}`
	cases := []struct {
		route string
		f     fault.Fault
		body  string
		check func(resp *http.Response, b []byte, err error) string
	}{
		{"getTokenSupply", fault.Fault{Kind: fault.Latency, Delay: 50 * time.Millisecond}, supply, func(r *http.Response, b []byte, err error) string {
			if err != nil || r.StatusCode != 200 || !strings.Contains(string(b), `"amount"`) {
				return "latency: want a normal answer"
			}
			return ""
		}},
		{"getTokenSupply", fault.Fault{Kind: fault.HTTP403}, supply, status(403)},
		{"getTokenSupply", fault.Fault{Kind: fault.HTTP429}, supply, status(429)},
		{"getTokenSupply", fault.Fault{Kind: fault.HTTP500}, supply, status(500)},
		{"*", fault.Fault{Kind: fault.HTTP503}, supply, status(503)},
		{"getTokenSupply", fault.Fault{Kind: fault.Reset}, supply, transportError},
		{"getProgramAccounts", fault.Fault{Kind: fault.Truncate, AfterBytes: 1000}, gpa, transportError},
		{"getTokenSupply", fault.Fault{Kind: fault.Truncate, AfterBytes: 10}, supply, transportError},
		{"getTokenSupply", fault.Fault{Kind: fault.Malformed}, supply, func(r *http.Response, b []byte, err error) string {
			if err != nil || r.StatusCode != 200 || jsonValid(b) {
				return "malformed: want 200 with invalid JSON"
			}
			return ""
		}},
		{"getHealth", fault.Fault{Kind: fault.RPCNodeUnhealthy}, `{"jsonrpc":"2.0","id":1,"method":"getHealth"}`, rpcCode(-32005)},
		{"getProgramAccounts", fault.Fault{Kind: fault.RPCExcludedIndex}, gpa, rpcCode(-32010)},
		{"getTokenSupply", fault.Fault{Kind: fault.RPCMethodNotFound}, supply, rpcCode(-32601)},
		{"getTokenAccounts", fault.Fault{Kind: fault.RPCInvalidParams}, `{"jsonrpc":"2.0","id":1,"method":"getTokenAccounts","params":{"mint":"` + classicMint + `"}}`, rpcCode(-32602)},
	}
	for _, c := range cases {
		t.Run(c.route+"/"+string(c.f.Kind), func(t *testing.T) {
			s.Faults().Inject(c.route, fault.Fault{Kind: c.f.Kind, Delay: c.f.Delay, AfterBytes: c.f.AfterBytes, Times: 1})
			start := time.Now()
			resp, b, err := rawPost(t, url, c.body)
			if msg := c.check(resp, b, err); msg != "" {
				t.Errorf("%s (err %v, body %.200s)", msg, err, b)
			}
			if c.f.Delay > 0 && time.Since(start) < c.f.Delay {
				t.Error("no delay")
			}
			// Times: 1 — the next request is normal.
			resp, b, err = rawPost(t, url, c.body)
			if err != nil || resp.StatusCode != 200 || strings.Contains(string(b), `"error"`) {
				t.Errorf("fault outlived Times=1: %v %.200s", err, b)
			}
		})
	}
}

func jsonValid(b []byte) bool { return json.Valid(b) }

func itoa(i int) string { return strconv.Itoa(i) }

func status(code int) func(*http.Response, []byte, error) string {
	return func(r *http.Response, _ []byte, err error) string {
		if err != nil || r.StatusCode != code {
			return "want HTTP " + http.StatusText(code)
		}
		return ""
	}
}

func rpcCode(code int) func(*http.Response, []byte, error) string {
	return func(r *http.Response, b []byte, err error) string {
		if err != nil || r.StatusCode != 200 || !strings.Contains(string(b), `"error":{"code":`+itoa(code)) {
			return "want JSON-RPC error " + itoa(code)
		}
		return ""
	}
}

func transportError(r *http.Response, _ []byte, err error) string {
	if err == nil {
		return "want a transport error (reset or truncated body)"
	}
	return ""
}

func TestBatchAndBadRequests(t *testing.T) {
	s, url := start(t, 20)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"getSlot"},` +
		`{"jsonrpc":"2.0","id":"b","method":"getTokenSupply","params":["` + classicMint + `"]},` +
		`{"jsonrpc":"2.0","id":3,"method":"nope"},` +
		`{"id":4,"method":"getSlot"},` +
		`{"jsonrpc":"2.0","id":5,"method":"getProgramAccounts","params":["` + TokenProgramID + `",{"encoding":"base64","dataSlice":{"offset":32,"length":40},"filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}]`
	var out []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	_, b := post(t, url, batch)
	if err := json.Unmarshal(b, &out); err != nil || len(out) != 5 {
		t.Fatalf("batch: %v %s", err, b)
	}
	if out[0].Error != nil || out[1].ID != "b" || !strings.Contains(string(out[1].Result), "999999999123456789") ||
		out[2].Error.Code != CodeMethodNotFound || out[3].Error.Code != CodeInvalidRequest || out[4].Error != nil {
		t.Errorf("batch answers: %s", b)
	}
	// A protocol fault applies to its own element of a batch; a generic one
	// to the whole response.
	s.Faults().Inject("getSlot", fault.Fault{Kind: fault.RPCNodeUnhealthy, Times: 1})
	_, b = post(t, url, `[{"jsonrpc":"2.0","id":1,"method":"getSlot"},{"jsonrpc":"2.0","id":2,"method":"getHealth"}]`)
	if !strings.Contains(string(b), `"code":-32005`) || !strings.Contains(string(b), `"result":"ok"`) {
		t.Errorf("batch with protocol fault: %s", b)
	}
	s.Faults().Inject("getHealth", fault.Fault{Kind: fault.HTTP429, Times: 1})
	if st, _ := post(t, url, `[{"jsonrpc":"2.0","id":1,"method":"getSlot"},{"jsonrpc":"2.0","id":2,"method":"getHealth"}]`); st != 429 {
		t.Errorf("batch with 429 fault: status %d", st)
	}

	for body, code := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"method":`: CodeParseError,
		`[{"jsonrpc":"2.0"`:                 CodeParseError,
		`[]`:                                CodeInvalidRequest,
		`42`:                                CodeInvalidRequest,
		`{"jsonrpc":"1.0","id":1,"method":"getSlot"}`:                CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":{},"method":"getSlot"}`:               CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":7}`:                        CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"getSlot","params":"x"}`:   CodeInvalidParams,
		`{"jsonrpc":"2.0","id":1,"method":"getHealth","params":[1]}`: CodeInvalidParams,
	} {
		st, b := post(t, url, body)
		var env struct {
			Error *rpcError `json:"error"`
		}
		if err := json.Unmarshal(b, &env); st != 200 || err != nil || env.Error == nil || env.Error.Code != code {
			t.Errorf("%s: status %d body %s, want code %d", body, st, b, code)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

// TestConcurrentMutations runs requests and mutations together (-race).
func TestConcurrentMutations(t *testing.T) {
	s, url := start(t, 200)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				switch g {
				case 0:
					_ = s.SetSupply(classicMint, uint64(i))
					_ = s.SetMintAuthority(classicMint, authority)
					s.BumpSlot(1)
				case 1:
					s.SetUnhealthy(uint64(i))
					s.SetHealthy()
					s.Faults().Inject("getSlot", fault.Fault{Kind: fault.Latency, Delay: time.Millisecond})
				default:
					_, _ = rawPostNoT(url, `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["`+classicMint+`",{"encoding":"jsonParsed"}]}`)
					_, _ = rawPostNoT(url, `{"jsonrpc":"2.0","id":1,"method":"getSlot"}`)
				}
			}
		}()
	}
	wg.Wait()
	_, _ = s.Truth(classicMint)
}

func rawPostNoT(url, body string) ([]byte, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// TestStartStopsWithContext checks Start's context ends the server.
func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := New()
	url, err := s.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("url %s", url)
	}
	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("server still listening after ctx cancel")
}
