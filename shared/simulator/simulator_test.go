package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mint = "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR"

func TestStartServesEveryUpstream(t *testing.T) {
	s, err := Start(context.Background(), Options{Mint: mint, Seed: 1, Accounts: 300, SupplyEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	supply := func() string {
		body := `{"jsonrpc":"2.0","id":1,"method":"getTokenSupply","params":["` + mint + `"]}`
		resp, err := http.Post(s.RPCURL, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out struct {
			Result struct {
				Value struct{ Amount string } `json:"value"`
			} `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Result.Value.Amount
	}
	// The seed's supply is 987654321123456; live mode may already have
	// minted a little by the first read (the ticker runs every 20 ms).
	first := supply()
	if n, err := strconv.ParseUint(first, 10, 64); err != nil || n < 987654321123456 || n > 987654321123456*101/100 {
		t.Errorf("supply = %s, want the seed's 987654321123456 or a little more", first)
	}
	deadline := time.Now().Add(5 * time.Second)
	for supply() == first {
		if time.Now().After(deadline) {
			t.Fatal("supply never grew in live mode")
		}
		time.Sleep(10 * time.Millisecond)
	}

	resp, err := http.Get(s.DexScreenerURL + "/token-pairs/v1/solana/" + mint)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var pairs []map[string]any
	if err := json.Unmarshal(b, &pairs); err != nil || len(pairs) == 0 {
		t.Fatalf("dexscreener: %v %s", err, b)
	}
	resp, err = http.Get(s.GeckoTerminalURL + "/networks/solana/tokens/" + mint + "/pools")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("geckoterminal: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	if h := s.Holders(); h.Holders == 0 || h.TokenAccounts != 300 {
		t.Errorf("holders truth = %+v", h)
	}
	if m := s.Market(); !m.HasSelected || len(s.OfficialPairs) == 0 {
		t.Errorf("market truth = %+v, official %v", m, s.OfficialPairs)
	}
	for _, p := range s.OfficialPairs {
		if p.Dex == "" || (p.Base != "DEMO" && p.Quote != "DEMO") || p.URL == "" {
			t.Errorf("official pair without details: %+v", p)
		}
	}
}

func TestStartNeedsAMint(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Fatal("started without a mint")
	}
}
