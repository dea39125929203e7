package standalone_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// otherMint is a second token (base58 of a SHA-256 of "tokendata second
// token"): no key of it is any key of the demo token's.
const otherMint = "DS2U1tjrGi76tKvtLAUEUbJK9LTYqi6atFMCwo8GPdbr"

// release is one token's collectors and edge on the shared Redis.
type release struct {
	mint, supply string
	collectors   []*proc
	api, ops     string
}

// TestTwoTokensOneRedis runs two releases, each with its own token file,
// simulator, three collector binaries and edge binary, on one
// redis-server. Every key in Redis belongs to one of the two mints, and
// both hold the same set of records (documents, status records,
// history); each edge serves its own token only (its supply, its mint on
// every path, history included); and with the collectors of one token
// stopped, its edge, which re-reads the store only on a notification,
// reads nothing more while the other token's collectors keep publishing.
func TestTwoTokensOneRedis(t *testing.T) {
	dir := binaries(t)
	rs := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rels := []*release{{mint: config.DemoMint, supply: "987654321.123456"}, {mint: otherMint, supply: "123456789.5"}}
	for i, r := range rels {
		raw, _ := strconv.ParseUint(strings.ReplaceAll(r.supply, ".", ""), 10, 64)
		for range 6 - len(r.supply[strings.IndexByte(r.supply, '.')+1:]) {
			raw *= 10
		}
		sim, err := simulator.Start(ctx, simulator.Options{Mint: r.mint, Seed: uint64(11 + i), Accounts: 200, Supply: raw})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sim.Close)
		file := filepath.Join(t.TempDir(), "token.yaml")
		body := fmt.Sprintf("mint: %s\nname: Token %d\nsymbol: TK%d\ndecimals: 6\nmax_supply: \"1000000000\"\n", r.mint, i, i)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		base := []string{"REDIS_URL=" + rs.URL(), "TOKEN_CONFIG=" + file, "LOG_LEVEL=warn"}
		env := append(append([]string(nil), base...), "SOLANA_RPC_URL="+sim.RPCURL, "DEXSCREENER_URL="+sim.DexScreenerURL,
			"GECKOTERMINAL_URL="+sim.GeckoTerminalURL, "OPS_ADDR=127.0.0.1:0", "DRAIN_DELAY=0s", "UPSTREAMS_SIMULATED=true",
			"SUPPLY_REFRESH=1s", "METADATA_REFRESH=1s", "MARKET_REFRESH=1s", "HOLDERS_REFRESH=1s")
		for _, c := range []string{contract.CollectorSupply, contract.CollectorMarket, contract.CollectorHolders} {
			r.collectors = append(r.collectors, startProc(t, dir, c, env))
		}
		waitDocuments(t, rs.URL(), r.mint)
		_, r.api, r.ops = startEdgeBinary(t, dir, append(base, "EDGE_SNAPSHOT_POLL=1h"))
	}

	// Every key is one token's, and both tokens have the same records.
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewRedis(opts)
	defer func() { _ = b.Close() }()
	keys, err := b.Client().Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]map[string]bool{}
	for _, k := range keys {
		owner := ""
		for _, r := range rels {
			if rest, ok := strings.CutPrefix(k, "tokendata:"+r.mint+":"); ok {
				owner = r.mint
				if records[owner] == nil {
					records[owner] = map[string]bool{}
				}
				records[owner][rest] = true
			}
		}
		if owner == "" {
			t.Errorf("key %q belongs to neither token", k)
		}
	}
	a, o := records[rels[0].mint], records[rels[1].mint]
	for rec := range a {
		if !o[rec] {
			t.Errorf("%s has %q, %s has not", rels[0].mint, rec, rels[1].mint)
		}
	}
	if len(a) != len(o) || !a["supply"] || !a["status:supply"] || !hasPrefix(a, "history:") {
		t.Errorf("records: %v and %v", a, o)
	}

	// Each edge serves its token, and names no other.
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for i, r := range rels {
		other := rels[1-i].mint
		if got := getBody(t, client, r.api+"/api/total-supply"); got != r.supply {
			t.Errorf("edge of %s: total supply %q, want %q", r.mint, got, r.supply)
		}
		for _, p := range []string{"/api/supply", "/api/token-metadata", "/api/market", "/api/holders", "/api/status", "/api/history/supply/24h"} {
			body := getBody(t, client, r.api+p)
			if strings.Contains(body, other) || !strings.Contains(body, r.mint) && p != "/api/history/supply/24h" {
				t.Errorf("edge of %s, %s: names the other mint, or not its own: %.300s", r.mint, p, body)
			}
		}
	}

	// Notifications: the second token's collectors stop; its edge reads
	// the store no more, while the first token's edge keeps reading.
	for _, p := range rels[1].collectors {
		p.kill()
	}
	time.Sleep(500 * time.Millisecond) // a notification already sent lands
	quiet0, busy0 := refreshes(t, rels[1].ops), refreshes(t, rels[0].ops)
	time.Sleep(3 * time.Second)
	quiet1, busy1 := refreshes(t, rels[1].ops), refreshes(t, rels[0].ops)
	if quiet1 != quiet0 {
		t.Errorf("the edge of %s read the store %d times on the other token's notifications", otherMint, quiet1-quiet0)
	}
	if busy1 <= busy0 {
		t.Errorf("the edge of %s read no notification in 3 s (%d reads)", config.DemoMint, busy1-busy0)
	}
	t.Logf("%d keys; records per token %d; in 3 s the edge of the running token read the store %d times, the other %d times",
		len(keys), len(a), busy1-busy0, quiet1-quiet0)
}

func hasPrefix(m map[string]bool, p string) bool {
	for k := range m {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// waitDocuments waits until the store holds every document of mint.
func waitDocuments(t *testing.T, url, mint string) {
	t.Helper()
	opts, err := store.ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), mint)
	defer func() { _ = st.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		docs, _, err := st.ReadAll(context.Background())
		if err == nil && len(docs) == len(contract.Domains) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the store holds %d documents of %s (%v)", len(docs), mint, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getBody(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v: %.300s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// refreshes reads the edge's count of good store reads from its metrics.
func refreshes(t *testing.T, ops string) int {
	t.Helper()
	resp, err := probeClient.Get(ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `tokendata_edge_snapshot_refreshes_total{result="ok"} `); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no tokendata_edge_snapshot_refreshes_total{result=\"ok\"} in the edge's metrics")
	return 0
}
