package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// The rows of the fault matrix for the ledger cross-check: the
// standalone service, in process, reads three simulated ledger nodes
// (SOLANA_RPC_URLS, SUPPLY_QUORUM a majority, SUPPLY_NODE_MAX_LAG 150)
// over one ledger whose slot moves on, and one node is given a fault.
// Throughout, every answer of the edge is read: the total supply must
// never be a figure that a quorum did not confirm, nor go backwards.

// nodesRefresh is the supply poll of these rows.
const nodesRefresh = time.Second

// nodesBound is how long a node's fault, set or cleared, may take to show
// in /api/status: the poll under way at that moment may have asked the
// node already, so the poll after it is the first to see the change, and
// the edge then reads and renders the status record that poll wrote.
// Under -race on a busy machine each of the two polls takes up to 2 s of
// its 1 s interval and the edge's refresh up to 1.5 s: two polls and a
// second are too short there.
const nodesBound = 2*nodesRefresh + 3*time.Second

// lagSlack is how far a lag seen in one poll may be from the lag set: the
// slots the ledger advances while that poll asks the nodes.
const lagSlack = 50

// nodeRows is a running standalone over three simulated ledger nodes.
type nodeRows struct {
	sim *simulator.Sim
	api string
}

// startNodes starts the simulator with three ledger nodes, a ledger whose
// slot moves on (2.5 slots a second, as Solana's), and standalone over it.
func startNodes(t *testing.T, seed uint64) *nodeRows {
	t.Helper()
	return startNodesWith(t, seed, nodesRefresh, nil)
}

// startNodesWith is startNodes with a supply poll of refresh, and before
// (when set) run on the simulator before standalone starts.
func startNodesWith(t *testing.T, seed uint64, refresh time.Duration, before func(*simulator.Sim)) *nodeRows {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sim, err := simulator.Start(ctx, simulator.Options{Mint: config.DemoMint, Seed: seed, Accounts: 200, Nodes: 3})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if before != nil {
		before(sim)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(400 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sim.RPC.BumpSlot(1)
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); sim.Close() })
	r := start(t, simulator.Options{}, func(c *config.Common) {
		c.TokenConfig, c.TokenMint, c.TokenMaxSupply = "", config.DemoMint, config.DemoMaxSupply
		c.SolanaRPCURLs = config.Secret(strings.Join(sim.NodeURLs, ","))
		c.HoldersRPCURL = config.Secret(sim.RPCURL)
		c.DexScreenerURL, c.GeckoTerminalURL = sim.DexScreenerURL, sim.GeckoTerminalURL
		c.UpstreamsSimulated = true
		c.Supply = config.DomainTiming{Refresh: refresh, StaleAfter: 10 * refresh, TTL: max(time.Hour, 20*refresh)}
	})
	n := &nodeRows{sim: sim, api: r.info.API}
	waitFor(t, n.api, "/api/supply")
	n.waitLedger(t, 10*time.Second, func(l ledgerNodes) bool { return l.State == "agreed" && l.Agreed == 3 })
	return n
}

// ledgerNodes is /api/status's checks.ledger_nodes.
type ledgerNodes struct {
	Status  string `json:"status"`
	State   string `json:"state"`
	Agreed  int    `json:"agreed"`
	Slot    uint64 `json:"slot"`
	PerNode []struct {
		Node        int     `json:"node"`
		Verdict     string  `json:"verdict"`
		SlotsBehind *uint64 `json:"slots_behind"`
	} `json:"per_node"`
	Issues []string `json:"issues"`
}

// nodesStatus is what these rows read of /api/status.
type nodesStatus struct {
	Status   string   `json:"status"`
	Problems []string `json:"problems"`
	Checks   struct {
		LedgerNodes *ledgerNodes `json:"ledger_nodes"`
	} `json:"checks"`
}

func (n *nodeRows) status(t *testing.T) nodesStatus {
	t.Helper()
	resp, body := get(t, n.api+"/api/status")
	var s nodesStatus
	if err := json.Unmarshal(body, &s); resp.StatusCode != http.StatusOK || err != nil || s.Checks.LedgerNodes == nil {
		t.Fatalf("/api/status: %d %v: %s", resp.StatusCode, err, body)
	}
	return s
}

// verdict is node's verdict in l.
func (l ledgerNodes) verdict(node int) (string, uint64) {
	for _, p := range l.PerNode {
		if p.Node == node {
			var behind uint64
			if p.SlotsBehind != nil {
				behind = *p.SlotsBehind
			}
			return p.Verdict, behind
		}
	}
	return "", 0
}

// waitLedger waits up to d for /api/status's ledger nodes to meet ok and
// returns how long it took.
func (n *nodeRows) waitLedger(t *testing.T, d time.Duration, ok func(ledgerNodes) bool) time.Duration {
	t.Helper()
	since := openWindow(t) // d stretches by the time kept from the cores
	defer since.close()
	for {
		s := n.status(t)
		if ok(*s.Checks.LedgerNodes) {
			return time.Since(since.from)
		}
		if past, off := since.past(t, d); past {
			t.Fatalf("%s + %s (kept from the cores) on, /api/status's ledger nodes: %+v", d, off, *s.Checks.LedgerNodes)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// supplySeen is one read of /api/supply.
type supplySeen struct {
	total string
	slot  uint64
	check ledgerNodes // its cross_check
}

func (n *nodeRows) supply(t *testing.T) supplySeen {
	t.Helper()
	resp, body := get(t, n.api+"/api/supply")
	var s struct {
		TotalSupplyRaw string      `json:"total_supply_raw"`
		Slot           uint64      `json:"slot"`
		CrossCheck     ledgerNodes `json:"cross_check"`
	}
	if err := json.Unmarshal(body, &s); resp.StatusCode != http.StatusOK || err != nil || s.TotalSupplyRaw == "" {
		t.Fatalf("/api/supply: %d %v: %s", resp.StatusCode, err, body)
	}
	return supplySeen{total: s.TotalSupplyRaw, slot: s.Slot, check: s.CrossCheck}
}

// watch reads /api/supply and /api/status every 20 ms for d, failing on a
// total outside allowed or a slot that goes backwards, and returns how
// many answers it read, the totals seen in order, and the statuses seen.
func (n *nodeRows) watch(t *testing.T, d time.Duration, allowed ...string) (reads int, totals []string, statuses map[string]int) {
	t.Helper()
	statuses = map[string]int{}
	var last supplySeen
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		s := n.supply(t)
		reads++
		if !contains(allowed, s.total) {
			t.Fatalf("published %s, a figure no quorum confirmed (allowed %v)", s.total, allowed)
		}
		if s.slot < last.slot {
			t.Fatalf("the supply went backwards: %s at slot %d after %s at slot %d", s.total, s.slot, last.total, last.slot)
		}
		if len(totals) == 0 || totals[len(totals)-1] != s.total {
			totals = append(totals, s.total)
		}
		last = s
		statuses[n.status(t).Status]++
	}
	return reads, totals, statuses
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// counts says statuses as "degraded ×12, ok ×3".
func counts(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// nodeFaultRow runs one node fault: a baseline, the fault held for hold
// while every answer is read, then the time from clearing it to the
// cross-check agreeing again with all three nodes.
func nodeFaultRow(t *testing.T, order int, name string, node int, f solanasim.NodeFault, during func(ledgerNodes) bool) {
	n := startNodes(t, uint64(40+order))
	truth := n.supply(t).total
	n.sim.Nodes[node-1].SetFault(f)
	injected := time.Now()
	n.waitLedger(t, nodesBound, during)
	seenAfter := time.Since(injected)
	reads, _, statuses := n.watch(t, 4*nodesRefresh, truth)
	s := n.status(t)
	if s.Status != "degraded" || !hasPrefixed(s.Problems, fmt.Sprintf("ledger nodes: node %d ", node)) {
		t.Fatalf("/api/status during the fault: %s %q", s.Status, s.Problems)
	}
	verdict, behind := s.Checks.LedgerNodes.verdict(node)
	if doc := n.supply(t).check; doc.State != "degraded" || !during(doc) {
		t.Fatalf("/api/supply's cross_check during the fault: %+v", doc)
	}
	issue := s.Checks.LedgerNodes.Issues[0]

	n.sim.Nodes[node-1].SetFault(solanasim.NodeFault{})
	bound := nodesBound
	recovery := n.waitLedger(t, bound, func(l ledgerNodes) bool { return l.State == "agreed" && l.Agreed == 3 })
	if s := n.status(t); hasPrefixed(s.Problems, "ledger nodes:") {
		t.Errorf("/api/status after the fault: %q", s.Problems)
	}
	if got := n.supply(t).total; got != truth {
		t.Errorf("after the fault the supply is %s, want %s", got, truth)
	}
	what := fmt.Sprintf("200, the quorum's supply in every answer (%d reads, no other figure, no slot backwards); `cross_check` `degraded`, node %d `%s`", reads, node, verdict)
	if behind > 0 {
		what += fmt.Sprintf(" (%d slots behind)", behind)
	}
	recordRow(t, matrixRow{Order: order, Fault: name,
		During:   fmt.Sprintf("%s, seen %s after the fault began", what, roundDuration(seenAfter)),
		Status:   fmt.Sprintf("%s; `ledger nodes: %s`", counts(statuses), clip(issue, 70)),
		Recovery: recovery, Bound: bound})
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestNodeWrongAmount is a row of the fault matrix: one of three ledger
// nodes answers the supply off by 7 base units.
func TestNodeWrongAmount(t *testing.T) {
	t.Parallel()
	nodeFaultRow(t, 9, "one of three ledger nodes answers a wrong amount (node 2, off by 7 base units)", 2,
		solanasim.NodeFault{Kind: solanasim.NodeWrong, Delta: 7},
		func(l ledgerNodes) bool {
			v, _ := l.verdict(2)
			return v == "disagreeing" && l.State == "degraded" && l.Agreed == 2
		})
}

// TestNodeLags1000 is a row of the fault matrix: one of three ledger nodes
// answers from 1,000 slots behind the others.
func TestNodeLags1000(t *testing.T) {
	t.Parallel()
	nodeFaultRow(t, 10, "one of three ledger nodes lags 1,000 slots (node 3)", 3,
		solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000},
		func(l ledgerNodes) bool {
			// About 1,000: the ledger moves on while a poll asks the
			// three nodes (each holder change is a slot), so the lagging
			// node's answer may be a few slots later or earlier than the
			// quorum's (a loaded CI run saw it short of 1,000 for 3 s).
			v, behind := l.verdict(3)
			return v == "lagging" && behind >= 1000-lagSlack && behind <= 1000+lagSlack && l.State == "degraded"
		})
}

// TestNodeBalancer is a row of the fault matrix: one ledger URL is a load
// balancer that alternates, request by request, between a current node
// and one 1,000 slots behind.
func TestNodeBalancer(t *testing.T) {
	t.Parallel()
	nodeFaultRow(t, 11, "a load balancer alternating a current node and one 1,000 slots behind (node 2 of three)", 2,
		solanasim.NodeFault{Kind: solanasim.NodeBalancer, Slots: 1000},
		func(l ledgerNodes) bool { v, _ := l.verdict(2); return v == "lagging" && l.State == "degraded" })
}

// TestBurnSeenByAllNodes is a row of the fault matrix: a real burn, seen
// by all three nodes, is published within two polls, and no other figure
// in between.
func TestBurnSeenByAllNodes(t *testing.T) {
	t.Parallel()
	n := startNodes(t, 52)
	before := n.supply(t)
	var pre uint64
	if _, err := fmt.Sscan(before.total, &pre); err != nil {
		t.Fatal(err)
	}
	post := pre - 12_345_678 // 12.345678 tokens burnt
	want := fmt.Sprint(post)
	if err := n.sim.RPC.SetSupply(config.DemoMint, post); err != nil {
		t.Fatal(err)
	}
	burnt := time.Now()
	burning := openWindow(t) // bound stretches by the time kept from the cores
	// Two polls, and the edge's read and render of the new snapshot,
	// which under -race with rows in parallel takes up to seconds (a
	// fresh-clone run saw 2.64 s against 2.5).
	bound := 2*nodesRefresh + 2*time.Second
	var took time.Duration
	for {
		s := n.supply(t)
		if s.total == want {
			took = time.Since(burnt)
			if s.slot < before.slot {
				t.Fatalf("the burn published at slot %d, before the last figure's %d", s.slot, before.slot)
			}
			break
		}
		if s.total != before.total {
			t.Fatalf("published %s, neither the supply before the burn (%s) nor after it (%s)", s.total, before.total, want)
		}
		if past, off := burning.past(t, bound); past {
			t.Fatalf("%s after the burn (%s kept from the cores) the supply is still %s", time.Since(burnt), off, s.total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l := n.status(t).Checks.LedgerNodes
	if l.State != "agreed" || l.Agreed != 3 {
		t.Errorf("ledger nodes after the burn: %+v", *l)
	}
	reads, totals, statuses := n.watch(t, 2*nodesRefresh, want)
	recordRow(t, matrixRow{Order: 12, Fault: "a real burn seen by all three ledger nodes (published within two polls of 1 s)",
		During: fmt.Sprintf("the supply before the burn, then the supply after it (%d reads after it, %d figure, no slot backwards); `cross_check` `agreed`, 3 of 3",
			reads, len(totals)),
		Status:   counts(statuses) + " (nothing is amiss)",
		Recovery: took, Bound: bound})
}
