package dexsim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestMutationWhileServing changes the market while clients read both APIs
// (run with -race), then checks that what is served matches the new truth.
func TestMutationWhileServing(t *testing.T) {
	s, c := startServer(t)
	m := s.LoadScenario(testMint, 11)
	first := s.Truth(testMint)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, url := range []string{s.DexScreenerURL() + pairsPath(testMint), s.URL() + poolsPath(testMint)} {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					resp, err := c.Get(url)
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || !json.Valid(b) {
						errs <- errors.Join(err, errors.New(resp.Status+": "+string(b)))
						return
					}
				}
			}()
		}
	}

	newcomer := Pair{Address: "ZZnewcomer1111111111111111111111111111111111", Dex: "orca", Side: Base, Other: USDC,
		PriceUSD: "0.5", PriceNative: "0.5", Liquidity: &Liquidity{USD: 1e9}, CreatedAt: time.Now()}
	for i := range 50 {
		price := []string{"0.00001", "0.00002", "0.000015"}[i%3]
		if !s.Reprice(testMint, price) {
			t.Fatal("Reprice")
		}
		s.SetPair(testMint, newcomer)
		_ = s.Truth(testMint)
		s.RemovePair(testMint, newcomer.Address)
		if _, ok := s.Market(testMint); !ok {
			t.Fatal("market vanished")
		}
	}
	// Final state: the selected pair disappears, a new price, a new pair.
	if !s.RemovePair(testMint, first.Selected.Address) {
		t.Fatal("RemovePair")
	}
	s.Reprice(testMint, "0.00003")
	s.SetPair(testMint, newcomer)
	s.SetPairPrice(testMint, newcomer.Address, "0.00003", "0.00003")
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	truth := s.Truth(testMint)
	if truth.Selected.Address != newcomer.Address || truth.PriceUSDText != "0.00003" {
		t.Errorf("after mutation: selected %s at %s", truth.Selected.Address, truth.PriceUSDText)
	}
	if len(truth.Kept) != len(first.Kept) {
		t.Errorf("kept %d, want %d (one removed, one added)", len(truth.Kept), len(first.Kept))
	}
	_, body := get(t, c, s.DexScreenerURL()+pairsPath(testMint))
	w := ruleFromWire(t, body, testMint, m.OfficialPairs())
	if w.selected != truth.Selected.Address || w.priceUSD.Cmp(truth.PriceUSD) != 0 {
		t.Errorf("served bytes select %s", w.selected)
	}
	cur, _ := s.Market(testMint)
	checkGeckoAgrees(t, s, cur, truth)

	// Without the newcomer the rival pair (same liquidity as the removed
	// official one) is selected.
	s.RemovePair(testMint, newcomer.Address)
	if got := s.Truth(testMint); got.Selected.Official || got.Selected.Dex != "orca" {
		t.Errorf("after removing the official pair: %+v", got.Selected)
	}
}

func TestStartStopsWithContext(t *testing.T) {
	s := New()
	ctx, cancel := context.WithCancel(context.Background())
	base, err := s.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Start(ctx); again != base {
		t.Errorf("second Start: %s vs %s", again, base)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if st, _ := get(t, c, base+pairsPath("x")); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for s.URL() != "" {
		if time.Now().After(deadline) {
			t.Fatal("server still running after its context ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.Get(base + pairsPath("x")); err == nil {
		t.Error("server still answers")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after stop: %v", err)
	}
}

func TestDrift(t *testing.T) {
	s := New()
	s.LoadScenario(testMint, 2)
	before := s.Truth(testMint).PriceUSDText
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Drift(ctx, testMint, 1, time.Millisecond, 5) }()
	deadline := time.Now().Add(5 * time.Second)
	for s.Truth(testMint).PriceUSDText == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	after := s.Truth(testMint)
	if after.PriceUSDText == before {
		t.Fatal("price did not move")
	}
	for addr, p := range after.PairPriceUSD {
		if p != after.PriceUSDText {
			t.Errorf("pair %s implies %s, selected %s", addr, p, after.PriceUSDText)
		}
	}
}
