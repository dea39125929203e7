package standalone_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// volatile are the paths whose bodies change with time or with the
// collectors' last runs; every other body is compared byte for byte.
var volatile = map[string]bool{"/api/status": true, "/api/health": true}

// TestRedisRestartedEmptyNewEdge is the first row of the fault matrix
// (docs/operations.md): the collectors and an edge run against a real redis-server
// with the default poll intervals (supply 300 s, market 60 s, holders
// 900 s); Redis is restarted without persistence while the upstreams are
// down, and a new edge starts after it. Within 10 s the new edge answers
// every path with 200 and the very bodies served before (same numbers,
// original updated_at), and it is never ready while it would answer 503.
// Only the collectors' copies can bring that: no poll is due, and none
// would succeed.
func TestRedisRestartedEmptyNewEdge(t *testing.T) {
	rs := redistest.Start(t)
	t.Setenv("REDIS_URL", rs.URL())
	t.Setenv("COLLECTOR_WATCH_INTERVAL", "1s")
	// The holder count enumerated, as the other domains: a live count's
	// socket outlives the HTTP faults below, and its poll after the
	// restore re-confirms the count with a new updated_at, rightly; this
	// row is about what only the collectors' copies can bring back.
	t.Setenv("HOLDERS_LIVE", "false")
	r := start(t, simulator.Options{Seed: 11, Accounts: 300})
	old := r.info.API
	for _, p := range paths {
		waitFor(t, old, p)
	}

	// Upstreams down from here: what comes back is what the collectors hold.
	r.info.Sim.RPC.Faults().Inject("*", fault.Fault{Kind: fault.HTTP503})
	r.info.Sim.Dex.Faults().Inject(dexsim.RouteDexScreener, fault.Fault{Kind: fault.HTTP503})
	r.info.Sim.Dex.Faults().Inject(dexsim.RouteGeckoTerminal, fault.Fault{Kind: fault.HTTP503})
	before := map[string]response{}
	for _, p := range paths {
		before[p] = fetch(t, old+p)
	}

	rs.Restart() // empty: no persistence
	restarted := time.Now()
	api, url := newEdge(t, r.info)

	deadline := restarted.Add(10 * time.Second)
	for {
		ready := api.Ready()
		got := map[string]response{}
		all := true
		for _, p := range paths {
			got[p] = fetch(t, url+p)
			all = all && got[p].status == http.StatusOK
		}
		if ready && !all {
			t.Fatalf("the new edge is ready but answers %v", statuses(got))
		}
		if all && ready {
			for _, p := range paths {
				if volatile[p] {
					continue
				}
				if got[p].body != before[p].body || got[p].updatedAt != before[p].updatedAt {
					t.Errorf("%s on the new edge:\n%s (updated %s)\nbefore the restart:\n%s (updated %s)",
						p, got[p].body, got[p].updatedAt, before[p].body, before[p].updatedAt)
				}
			}
			recordRow(t, matrixRow{Order: 1, Fault: "Redis restarted empty, a new edge started after it",
				During:   "old edge: 200 from its copies; new edge: not ready until the collectors re-publish",
				Status:   "ok once re-published (original `updated_at`)",
				Recovery: time.Since(restarted), Bound: 10 * time.Second})
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after Redis restarted empty, the new edge (ready %v) answers %v", ready, statuses(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The edge that was running kept serving its copies throughout.
	for _, p := range paths {
		if got := fetch(t, old+p); got.status != http.StatusOK {
			t.Errorf("%s on the old edge: %d", p, got.status)
		}
	}
}

type response struct {
	status    int
	body      string
	updatedAt string
}

func fetch(t *testing.T, url string) response {
	t.Helper()
	resp, body := get(t, url)
	return response{status: resp.StatusCode, body: string(body), updatedAt: resp.Header.Get("X-Data-Updated-At")}
}

func statuses(m map[string]response) map[string]int {
	out := make(map[string]int, len(m))
	for p, r := range m {
		out[p] = r.status
	}
	return out
}
