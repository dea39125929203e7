package main

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// TestRun runs the service as its binary would: config from the
// environment, the simulator as the RPC, a real Redis, the ops port.
func TestRun(t *testing.T) {
	h := sha256.Sum256([]byte("cmd-mint"))
	mint := base58.Encode(h[:])
	sim := solanasim.New()
	if err := sim.AddToken(solanasim.Token{Mint: mint, Decimals: 6, Supply: 123_456_789,
		Metadata: solanasim.MetadataMetaplex, Name: "Cmd", Symbol: "CMD", UpdateAuthority: mint}); err != nil {
		t.Fatal(err)
	}
	url, err := sim.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sim.Close() }()
	rs := redistest.Start(t)
	ops := freeAddr(t)
	t.Setenv("TOKEN_MINT", mint)
	t.Setenv("TOKEN_MAX_SUPPLY", "1000000000")
	t.Setenv("SOLANA_RPC_URL", url+"/?api-key=SECRET")
	t.Setenv("REDIS_URL", rs.URL())
	t.Setenv("OPS_ADDR", ops)
	t.Setenv("DRAIN_DELAY", "0s")
	t.Setenv("SUPPLY_RETRY_BASE", "10ms")

	logs := &logging.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, logs) }()

	opts, _ := store.ParseRedisURL(rs.URL())
	st := store.New(store.NewRedis(opts), mint)
	defer func() { _ = st.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		docs, _, _ := st.ReadAll(context.Background(), contract.DomainSupply, contract.DomainMetadata)
		if len(docs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("documents not written; logs:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `tokendata_upstream_requests_total{method="getTokenSupply",outcome="ok",upstream="solana-rpc"} 1`) {
		t.Errorf("metrics lack the getTokenSupply call:\n%s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
	if !strings.Contains(logs.String(), `"msg":"starting"`) {
		t.Errorf("no start line:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "SECRET") || strings.Contains(string(body), "SECRET") {
		t.Errorf("the RPC key leaked:\n%s", logs.String())
	}
}

func TestRunRejectsConfig(t *testing.T) {
	for name, env := range map[string][2]string{
		"REDIS_URL":         {"REDIS_URL", ""},
		"SUPPLY_COMMITMENT": {"SUPPLY_COMMITMENT", "latest"},
		"TOKEN_MINT":        {"TOKEN_MINT", "not-a-mint"},
		"TOKEN_MAX_SUPPLY":  {"TOKEN_MAX_SUPPLY", ""}, // a mint alone does not say it
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("TOKEN_MINT", "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR")
			t.Setenv("TOKEN_MAX_SUPPLY", "1000000000")
			t.Setenv("REDIS_URL", "redis://127.0.0.1:1")
			t.Setenv(env[0], env[1])
			err := run(context.Background(), io.Discard)
			if err == nil || !strings.Contains(err.Error(), env[0]) {
				t.Errorf("run = %v, want an error naming %s", err, env[0])
			}
		})
	}
}
