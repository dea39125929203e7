package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// The row of the fault matrix for the holders cross-check, where a second
// holder source is a witness, not a vote (docs/decisions.md, Holders):
// the standalone service, in process, counts holders from the
// simulator's RPC every second and cross-checks every count
// (HOLDERS_CROSSCHECK_EVERY 1) with a second source,
// HOLDERS_CROSSCHECK_RPC_URL: a ledger node over the same ledger, which is
// given a fault. Throughout, every body that shows the holder count is
// read: the count must be the primary's, and the disagreement must be in
// each body's warnings.

// holdersRefresh is the holders poll of this row.
const holdersRefresh = time.Second

// holdersRows is a running standalone whose holders this row reads, and
// the ledger node that is its second holder source.
type holdersRows struct {
	api    string
	second *solanasim.Node
}

// startHolders starts the simulator (one ledger node besides its RPC),
// standalone over it with the node as the second holder source, and
// waits for a count the two sources agree on.
func startHolders(t *testing.T, seed uint64) *holdersRows {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sim, err := simulator.Start(ctx, simulator.Options{Mint: config.DemoMint, Seed: seed, Accounts: 200, Nodes: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); sim.Close() })
	t.Setenv("HOLDERS_CROSSCHECK_RPC_URL", sim.NodeURLs[0])
	t.Setenv("HOLDERS_CROSSCHECK_EVERY", "1")
	r := start(t, simulator.Options{}, func(c *config.Common) {
		c.TokenConfig, c.TokenMint, c.TokenMaxSupply = "", config.DemoMint, config.DemoMaxSupply
		c.SolanaRPCURL, c.HoldersRPCURL = config.Secret(sim.RPCURL), config.Secret(sim.RPCURL)
		c.DexScreenerURL, c.GeckoTerminalURL = sim.DexScreenerURL, sim.GeckoTerminalURL
		c.UpstreamsSimulated = true
		c.Holders = config.DomainTiming{Refresh: holdersRefresh, StaleAfter: 15 * holdersRefresh, TTL: time.Hour}
	})
	h := &holdersRows{api: r.info.API, second: sim.Nodes[0]}
	// each of the three bodies the row reads: /api/market answers before
	// the first holders count is in (without the wait, a loaded machine
	// reads /api/holders' 503 here)
	for _, p := range []string{"/api/holders", "/api/market", "/api/market-data"} {
		waitFor(t, h.api, p)
	}
	h.waitVerdict(t, 10*time.Second, contract.HoldersAgreed)
	return h
}

// holdersSeen is what the row reads of a body that shows the holder
// count: the count, the cross-check's verdict and reason (/api/holders
// only) and the warnings.
type holdersSeen struct {
	count    uint64
	method   string
	verdict  string
	reason   string
	warnings []contract.Warning
}

// read reads /api/holders, /api/market and /api/market-data.
func (h *holdersRows) read(t *testing.T) map[string]holdersSeen {
	t.Helper()
	out := map[string]holdersSeen{}
	for _, path := range []string{"/api/holders", "/api/market", "/api/market-data"} {
		resp, body := get(t, h.api+path)
		var b struct {
			Holders    json.RawMessage    `json:"holders"`
			Method     string             `json:"method"`
			CrossCheck json.RawMessage    `json:"cross_check"`
			Warnings   []contract.Warning `json:"warnings"`
		}
		if err := json.Unmarshal(body, &b); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%s: %d %v: %s", path, resp.StatusCode, err, body)
		}
		var s holdersSeen
		s.warnings = b.Warnings
		var count struct {
			Count uint64 `json:"count"`
		}
		switch path {
		case "/api/market-data": // holders: {count, …}
			if err := json.Unmarshal(b.Holders, &count); err != nil {
				t.Fatalf("%s holders: %v: %s", path, err, b.Holders)
			}
			s.count = count.Count
		default:
			if err := json.Unmarshal(b.Holders, &s.count); err != nil {
				t.Fatalf("%s holders: %v: %s", path, err, b.Holders)
			}
		}
		if path == "/api/holders" {
			var c struct {
				Verdict string `json:"verdict"`
				Reason  string `json:"reason"`
			}
			if err := json.Unmarshal(b.CrossCheck, &c); err != nil || c.Verdict == "" {
				t.Fatalf("/api/holders cross_check %s: %v", b.CrossCheck, err)
			}
			s.verdict, s.reason, s.method = c.Verdict, c.Reason, b.Method
		}
		out[path] = s
	}
	return out
}

// disagreeWarnings are the holders_sources_disagree warnings of ws.
func disagreeWarnings(ws []contract.Warning) []contract.Warning {
	var out []contract.Warning
	for _, w := range ws {
		if w.Code == contract.WarnHoldersSourcesDisagree {
			out = append(out, w)
		}
	}
	return out
}

// holdersProblem is /api/status's problem of the holders cross-check (""
// when there is none).
func holdersProblem(s statusReport) string {
	for _, p := range s.Problems {
		if strings.HasPrefix(p, "holders: cross-check ") {
			return p
		}
	}
	return ""
}

// waitVerdict waits up to d, stretched by the time this process is kept
// from the cores meanwhile (offcpu_test.go), for /api/holders'
// cross-check to say verdict, and returns how long it took and that time.
func (h *holdersRows) waitVerdict(t *testing.T, d time.Duration, verdict string) (took, offCPU time.Duration) {
	t.Helper()
	since := openWindow(t)
	defer since.close()
	for {
		if s := h.read(t)["/api/holders"]; s.verdict == verdict {
			return time.Since(since.from), since.offCPU(t)
		} else if past, off := since.past(t, d); past {
			t.Fatalf("%s + %s (kept from the cores) on, /api/holders cross_check %s, want %s", d, off, s.verdict, verdict)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHoldersSourcesDisagree is a row of the fault matrix: the second
// holder source lost 60 token accounts from its index (NodeHide) and
// counts fewer holders at about the same slot, beyond the churn the slots
// between the two counts allow. The primary's count stays published in
// /api/holders, /api/market and /api/market-data, each with the
// holders_sources_disagree warning (the cross-check's reason), once;
// /api/status is degraded naming both counts.
func TestHoldersSourcesDisagree(t *testing.T) {
	h := startHolders(t, 64)
	truth := h.read(t)["/api/holders"].count
	h.second.SetFault(solanasim.NodeFault{Kind: solanasim.NodeHide, Accounts: 60})
	injected := time.Now()
	h.waitVerdict(t, 3*holdersRefresh+edgeLag, contract.HoldersDisagree)
	seenAfter := time.Since(injected)

	reads, statuses := 0, map[string]int{}
	var problem string
	for end := time.Now().Add(4 * holdersRefresh); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		seen := h.read(t)
		reads++
		reason := seen["/api/holders"].reason
		if v := seen["/api/holders"].verdict; v != contract.HoldersDisagree {
			t.Fatalf("read %d: /api/holders cross_check %s during the fault, want disagree", reads, v)
		}
		if m := seen["/api/holders"].method; m != contract.HoldersMethodLive {
			t.Fatalf("read %d: /api/holders method %s, want the default's live count cross-checked", reads, m)
		}
		for path, s := range seen {
			if s.count != truth {
				t.Fatalf("read %d: %s holders %d, want the primary's %d", reads, path, s.count, truth)
			}
			// The three bodies are read one after the other: a poll
			// between two reads writes a new check with its own reason
			// (the counts' slots), so the message is compared with the
			// reason only in /api/holders, whose body carries both.
			w := disagreeWarnings(s.warnings)
			if len(w) != 1 || w[0].Message == "" || (path == "/api/holders" && w[0].Message != reason) {
				t.Fatalf("read %d: %s holders_sources_disagree warnings %+v, want one, the cross-check's reason %q", reads, path, w, reason)
			}
		}
		s := readStatus(t, h.api)
		statuses[s.Status]++
		if problem = holdersProblem(s); s.Status != "degraded" || !strings.HasPrefix(problem, "holders: cross-check disagree (") {
			t.Fatalf("/api/status during the fault: %s %q", s.Status, s.Problems)
		}
	}

	h.second.SetFault(solanasim.NodeFault{})
	cleared := time.Now()
	// Two polls (one under -race on a busy machine takes longer than its
	// interval), then the edge's renders (edgeLag: CI saw disagree still
	// 5 s after the clear, beside the chart lane).
	bound := 2*holdersRefresh + edgeLag
	recovery, off := h.waitVerdict(t, bound, contract.HoldersAgreed)
	for path, s := range h.read(t) {
		if w := disagreeWarnings(s.warnings); len(w) != 0 || s.count != truth {
			t.Errorf("%s once agreed: holders %d (want %d), warnings %+v", path, s.count, truth, w)
		}
	}
	if s := readStatus(t, h.api); holdersProblem(s) != "" {
		t.Errorf("/api/status once agreed: %q", s.Problems)
	}
	t.Logf("agreed again %s after the fault was cleared", time.Since(cleared).Round(10*time.Millisecond))
	recordRow(t, matrixRow{Order: 21, Fault: "the second holder source lost 60 token accounts from its index (`HOLDERS_CROSSCHECK_RPC_URL`, a ledger node over the same ledger; the live count, the default, cross-checked every `HOLDERS_REFRESH` of 1 s beside its polls)",
		During: fmt.Sprintf("200, the primary's %d holders in `/api/holders`, `/api/market` and `/api/market-data` (%d reads of each), never the second's; `cross_check` `disagree`; `holders_sources_disagree` in the three bodies' warnings; seen %s after the fault began",
			truth, reads, roundDuration(seenAfter)),
		Status:   fmt.Sprintf("%s; `%s`", counts(statuses), problem),
		Recovery: recovery, Bound: bound, OffCPU: off})
}
