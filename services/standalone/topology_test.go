package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// Rows 7 and 8 of the fault matrix run the whole service, as the chart
// wires it (the three collector binaries and two edge binaries), on the
// engines an operator grows into: a real Redis Cluster of six
// redis-server (three masters, three replicas, cluster-node-timeout 2 s)
// and a real Sentinel setup (a master, a replica, three sentinels). The
// master that holds the supply document is killed with SIGKILL under
// load.

// TestClusterMasterKilled is row 7.
func TestClusterMasterKilled(t *testing.T) {
	c := redistest.StartCluster(t)
	runMasterKilled(t, topologyFault{
		order: 7, url: c.URL(),
		fault: "the Redis Cluster master that holds the supply document killed with SIGKILL under load (6 nodes, 3 masters, `cluster-node-timeout` 2 s)",
		kill: func() string {
			addr := c.MasterOf(contract.DocumentKey(config.DemoMint, contract.DomainSupply))
			c.Kill(addr)
			return addr
		},
		failover: func() time.Duration { return c.WaitHealthy(30 * time.Second) },
		promoted: "the cluster promotes its replica",
	})
}

// TestSentinelMasterKilled is row 8.
func TestSentinelMasterKilled(t *testing.T) {
	s := redistest.StartSentinel(t)
	var old string
	runMasterKilled(t, topologyFault{
		order: 8, url: s.URL(),
		fault: "the Redis master killed with SIGKILL under load, Sentinel (a master, a replica, 3 sentinels, `down-after-milliseconds` 1 s)",
		kill: func() string {
			old = s.KillMaster()
			return old
		},
		failover: func() time.Duration {
			d, _ := s.WaitFailover(old, 30*time.Second)
			return d
		},
		promoted: "the sentinels promote the replica",
	})
}

type topologyFault struct {
	order    int
	url      string
	fault    string
	kill     func() string
	failover func() time.Duration
	promoted string
}

// writeBound is the asserted time from the end of the failover to the
// first write of every domain and to both edges serving it: a collector
// polls every second, and the edges learn of a write by its notification
// alone (their snapshot poll is an hour).
const writeBound = 5 * time.Second

func runMasterKilled(t *testing.T, f topologyFault) {
	dir := binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim, err := simulator.Start(ctx, simulator.Options{Mint: config.DemoMint, Seed: 7, Accounts: 300, Supply: farFromMax,
		PriceEvery: 50 * time.Millisecond, SupplyEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	opts, err := store.ParseRedisURL(f.url)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), config.DemoMint)
	defer func() { _ = st.Close() }()

	env := append(tokenEnv(f.url), "SOLANA_RPC_URL="+sim.RPCURL, "DEXSCREENER_URL="+sim.DexScreenerURL,
		"GECKOTERMINAL_URL="+sim.GeckoTerminalURL, "OPS_ADDR=127.0.0.1:0", "DRAIN_DELAY=0s", "UPSTREAMS_SIMULATED=true",
		"SUPPLY_REFRESH=1s", "METADATA_REFRESH=1s", "MARKET_REFRESH=1s", "HOLDERS_REFRESH=1s")
	for _, c := range []string{contract.CollectorSupply, contract.CollectorMarket, contract.CollectorHolders} {
		startProc(t, dir, c, env)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		docs, _, err := st.ReadAll(ctx)
		if err == nil && len(docs) == len(contract.Domains) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the store holds %d of the %d documents (%v)", len(docs), len(contract.Domains), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The edges re-read the store only on a notification.
	edgeEnv := append(tokenEnv(f.url), "EDGE_SNAPSHOT_POLL=1h")
	var apis []string
	for range 2 {
		_, api, _ := startEdgeBinary(t, dir, edgeEnv)
		apis = append(apis, api)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var answers atomic.Int64
	var bad violations
	var statusMu sync.Mutex
	statusSeen := map[string]int{}
	paths := append(slices.Clone(dataPaths), "/api/token-metadata")
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, api := range apis {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if err := checkEdge(client, api+paths[i%len(paths)]); err != nil {
					bad.add("%s%s: %v", api, paths[i%len(paths)], err)
				}
				answers.Add(1)
				if i%20 == 0 {
					s, _ := edgeStatus(client, api)
					statusMu.Lock()
					statusSeen[s.Status]++
					statusMu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)

	old := f.kill()
	took := f.failover()
	promotedAt := time.Now()
	t.Logf("master %s killed; %s in %s", old, f.promoted, took.Round(time.Millisecond))

	// Every domain written again after the failover, in the store and on
	// both edges (brought by a notification).
	written := map[contract.Domain]time.Duration{}
	served := map[string]time.Duration{}
	for len(written) < len(contract.Domains) || len(served) < len(apis) {
		if time.Since(promotedAt) > writeBound+10*time.Second {
			t.Fatalf("%s after the failover: domains written again %v, edges serving a newer supply %v", time.Since(promotedAt).Round(time.Millisecond), written, served)
		}
		if docs, _, err := st.ReadAll(ctx); err == nil {
			for d, doc := range docs {
				if _, ok := written[d]; !ok && doc.UpdatedAt.After(promotedAt) {
					written[d] = time.Since(promotedAt)
				}
			}
		}
		for _, api := range apis {
			if _, ok := served[api]; ok {
				continue
			}
			if s, err := edgeStatus(client, api); err == nil {
				if at := s.Checks.Domains["supply"].UpdatedAt; at != nil && at.After(promotedAt) {
					served[api] = time.Since(promotedAt)
				}
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	// The history writes landed on the new master too: each measure the
	// collectors sample has a point written after the failover.
	for _, m := range []contract.Measure{contract.MeasurePriceUSD, contract.MeasureSupply, contract.MeasureHolders} {
		series, err := st.HistoryRange(ctx, m, contract.TierRaw, promotedAt, time.Now().Add(contract.MaxClockSkew), 0)
		if err != nil {
			t.Errorf("history of %s after the failover: %v", m, err)
		} else if len(series.Points) == 0 {
			t.Errorf("history of %s: no sample written after the failover", m)
		}
	}

	bad.report(t, "bad answers of the edges")
	slowest := slowestOf(written)
	notified := slowestOf(served)
	recovery := max(slowest, notified)
	if recovery > writeBound {
		t.Errorf("recovered %s after the failover (every domain written again: %s; both edges serving it: %s), more than %s", recovery, slowest, notified, writeBound)
	}
	statusMu.Lock()
	seen := describeCounts(statusSeen)
	statusMu.Unlock()
	t.Logf("%d answers of the edges; /api/status: %s; domains written again after %v; edges notified after %v", answers.Load(), seen, written, served)
	recordRow(t, matrixRow{Order: f.order, Fault: f.fault,
		During: fmt.Sprintf("every answer 200 from the edges' copies (%d answers of 2 edges); %s after %s; a write acknowledged by the dead master and not yet replicated is lost, and the next poll (1 s here) writes it again",
			answers.Load(), f.promoted, roundDuration(took)),
		Status:   "`/api/status` seen: " + seen,
		Recovery: recovery, Bound: writeBound})
}

// statusAnswer is the part of /api/status the topology rows read.
type statusAnswer struct {
	Status string `json:"status"`
	Checks struct {
		Domains map[string]struct {
			UpdatedAt *time.Time `json:"updated_at"`
		} `json:"domains"`
	} `json:"checks"`
}

func edgeStatus(client *http.Client, api string) (statusAnswer, error) {
	var s statusAnswer
	resp, err := client.Get(api + "/api/status")
	if err != nil {
		return s, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(body, &s)
}

func slowestOf[K comparable](m map[K]time.Duration) time.Duration {
	var d time.Duration
	for _, v := range m {
		d = max(d, v)
	}
	return d
}

// describeCounts renders {"ok": 40, "degraded": 2} as "ok ×40, degraded ×2".
func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
