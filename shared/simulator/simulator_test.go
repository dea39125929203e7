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

// A simulator started again (its pod moved to another node) is never
// behind the slot its predecessor reached, minting once a minute (the
// chart's cadence) with the ticker's jitter: the collectors refuse
// answers older than the slot they last published. The predecessor's day
// is played with afterMint at the times of its mints; the one started
// again begins where Start begins, at the clock's slot.
func TestRestartedSimulatorIsNotBehind(t *testing.T) {
	t0 := time.Date(2026, time.December, 2, 3, 0, 0, 0, time.UTC)
	jitter := []time.Duration{0, 40 * time.Millisecond, -30 * time.Millisecond, 390 * time.Millisecond, -390 * time.Millisecond}
	slot := slotAt(t0) // where Start begins (its setup takes no slot)
	for i := 1; i <= 24*60; i++ {
		at := t0.Add(time.Duration(i)*time.Minute + jitter[i%len(jitter)])
		slot = afterMint(slot, at)
		// the restart takes at least a second: the process started again
		// and its token set up
		if again := slotAt(at.Add(time.Second)); again < slot {
			t.Fatalf("mint %d at %s: the ledger at slot %d, a simulator started a second later at %d", i, at.Format(time.TimeOnly), slot, again)
		}
	}
	if lead := slot - slotAt(t0.Add(24*time.Hour)); lead > 160 {
		t.Errorf("after a day of mints the ledger is %d slots ahead of the clock", lead)
	}

	before := slotAt(time.Now())
	s, err := Start(context.Background(), Options{Mint: mint, Seed: 1, Accounts: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, after := s.RPC.Slot(), slotAt(time.Now()); got < before || got > after {
		t.Errorf("Start's ledger is at slot %d, the clock's was %d before it and %d after", got, before, after)
	}
	// A given first slot is kept (tests whose output names slots).
	fixed, err := Start(context.Background(), Options{Mint: mint, Seed: 1, Accounts: 50, Slot: 300_000_000})
	if err != nil {
		t.Fatal(err)
	}
	defer fixed.Close()
	if got := fixed.RPC.Slot(); got != 300_000_000 {
		t.Errorf("Options.Slot 300,000,000: the ledger starts at slot %d", got)
	}
}
