package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// The rows of the fault matrix for the live holder count: the
// standalone service, in process, with HOLDERS_LIVE on a simulated ledger
// node (its PubSub socket can fail) and HOLDERS_REFRESH at a minute, so
// that only the live count can explain a change published within
// seconds. Every /api/holders read must show a count the ledger had.

// liveRefresh is the holders poll of these rows.
const liveRefresh = time.Minute

// liveBound is how soon these rows require a change published, and a
// count live again after a fault: generous for -race on a loaded machine.
const liveBound = 15 * time.Second

// liveRows is a running standalone with a live holder count.
type liveRows struct {
	sim  *simulator.Sim
	node *solanasim.Node
	api  string
	// had is every holder count the ledger had during the row.
	had map[uint64]bool
}

// liveHolders is what these rows read of /api/holders.
type liveHolders struct {
	Holders         uint64             `json:"holders"`
	NonZeroAccounts uint64             `json:"non_zero_accounts"`
	TokenAccounts   uint64             `json:"token_accounts"`
	Method          string             `json:"method"`
	Slot            uint64             `json:"slot"`
	Warnings        []contract.Warning `json:"warnings"`
	Live            *struct {
		AnchorSlot uint64 `json:"anchor_slot"`
		Resync     *struct {
			Agreed     bool   `json:"agreed"`
			Live       uint64 `json:"live"`
			Enumerated uint64 `json:"enumerated"`
		} `json:"resync"`
	} `json:"live"`
}

// startLive starts the simulator (one ledger node, the holders' node),
// standalone over it with HOLDERS_LIVE and env, and waits for a live
// count.
func startLive(t *testing.T, seed uint64, refresh time.Duration, env map[string]string, before func(*simulator.Sim)) *liveRows {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sim, err := simulator.Start(ctx, simulator.Options{Mint: config.DemoMint, Seed: seed, Accounts: 200, Nodes: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); sim.Close() })
	if before != nil {
		before(sim)
	}
	for k, v := range map[string]string{"HOLDERS_LIVE": "true", "HOLDERS_PUBLISH_INTERVAL": "200ms",
		"HOLDERS_WS_PING": "250ms", "HOLDERS_WS_SILENCE": "2s", "HOLDERS_WS_BACKOFF": "250ms", "HOLDERS_WS_BACKOFF_MAX": "2s"} {
		t.Setenv(k, v)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	r := start(t, simulator.Options{}, func(c *config.Common) {
		c.TokenConfig, c.TokenMint, c.TokenMaxSupply = "", config.DemoMint, config.DemoMaxSupply
		c.SolanaRPCURL, c.HoldersRPCURL = config.Secret(sim.RPCURL), config.Secret(sim.NodeURLs[0])
		c.DexScreenerURL, c.GeckoTerminalURL = sim.DexScreenerURL, sim.GeckoTerminalURL
		c.UpstreamsSimulated = true
		c.Holders = config.DomainTiming{Refresh: refresh, StaleAfter: 10 * refresh, TTL: time.Hour}
	})
	l := &liveRows{sim: sim, node: sim.Nodes[0], api: r.info.API, had: map[uint64]bool{}}
	l.remember()
	waitFor(t, l.api, "/api/holders")
	// Every domain in before a row begins: the rows judge /api/status
	// during their fault, and under load the market collector's first
	// document can come after the first holder count (read then,
	// "market: no data" would be blamed on the holders' fault).
	deadline := time.Now().Add(150 * time.Second)
	for {
		st := l.fullStatus(t)
		if st.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/status still %s before the row (%q)", st.Status, st.Problems)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return l
}

// remember adds the ledger's holder count now to those it had.
func (l *liveRows) remember() { l.had[uint64(l.sim.Holders().Holders)] = true }

// change records a holder change of the simulated ledger:
// l.change(t)(l.sim.RPC.OpenHolder(…)).
func (l *liveRows) change(t *testing.T) func(solanasim.HolderChange, error) {
	return func(_ solanasim.HolderChange, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		l.remember()
	}
}

// sellOut sets the largest account's balance to 0.
func (l *liveRows) sellOut(t *testing.T) {
	t.Helper()
	largest, _ := l.sim.RPC.Largest(config.DemoMint)
	for _, a := range largest {
		if a.Amount > 0 {
			l.change(t)(l.sim.RPC.SetHolderBalance(config.DemoMint, a.Address, 0))
			return
		}
	}
	t.Fatal("no account with a balance")
}

func (l *liveRows) holders(t *testing.T) liveHolders {
	t.Helper()
	resp, body := get(t, l.api+"/api/holders")
	var h liveHolders
	if err := json.Unmarshal(body, &h); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/api/holders: %d %v: %s", resp.StatusCode, err, body)
	}
	if !l.had[h.Holders] {
		t.Fatalf("/api/holders: %d holders (method %s, slot %d), a count the ledger never had", h.Holders, h.Method, h.Slot)
	}
	return h
}

// exact reports whether h holds the ledger's figures now.
func (l *liveRows) exact(h liveHolders) bool {
	truth := l.sim.Holders()
	return h.Holders == uint64(truth.Holders) && h.NonZeroAccounts == uint64(truth.NonZeroAccounts)
}

// wait waits up to d for ok on /api/holders and returns the body and how
// long it took.
func (l *liveRows) wait(t *testing.T, what string, d time.Duration, ok func(liveHolders) bool) (liveHolders, time.Duration) {
	t.Helper()
	since := openWindow(t) // d stretches by the time kept from the cores
	defer since.close()
	for {
		h := l.holders(t)
		if ok(h) {
			return h, time.Since(since.from)
		}
		if past, _ := since.past(t, d); past {
			truth := l.sim.Holders()
			live := "null"
			if h.Live != nil {
				b, _ := json.Marshal(h.Live)
				live = string(b)
			}
			t.Fatalf("%s on, %s: /api/holders %+v, live %s; the ledger: %d holders, %d non-zero", d, what, h, live, truth.Holders, truth.NonZeroAccounts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *liveRows) liveExact(h liveHolders) bool {
	return h.Method == contract.HoldersMethodLive && l.exact(h)
}

func (l *liveRows) statusOf(t *testing.T) (string, []string) {
	t.Helper()
	s := l.fullStatus(t)
	return s.Status, s.Problems
}

type liveStatus struct {
	Status   string   `json:"status"`
	Problems []string `json:"problems"`
	Checks   struct {
		HoldersSubscription *subscriptions `json:"holders_subscription"`
	} `json:"checks"`
}

func (l *liveRows) fullStatus(t *testing.T) liveStatus {
	t.Helper()
	resp, body := get(t, l.api+"/api/status")
	var s liveStatus
	if err := json.Unmarshal(body, &s); resp.StatusCode != http.StatusOK || err != nil || s.Checks.HoldersSubscription == nil {
		t.Fatalf("/api/status: %d %v: %s", resp.StatusCode, err, body)
	}
	return s
}

// TestLiveHoldersSocketFaults is two rows of the fault matrix: the
// holders node's socket dropped, then stalled, while holders change. The
// live count ends at once (an enumeration's count is published, method
// getProgramAccounts), and once the node serves its socket again a new
// enumeration re-anchors it: the changes of the gap are in it.
func TestLiveHoldersSocketFaults(t *testing.T) {
	l := startLive(t, 71, liveRefresh, nil, nil)
	first, _ := l.wait(t, "a live count", liveBound, l.liveExact)
	var took []time.Duration
	for range 5 {
		l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 1_000_000))
		_, d := l.wait(t, "a new holder published", liveBound, l.liveExact)
		took = append(took, d)
	}
	slices.Sort(took)
	anchor := first.Live.AnchorSlot
	for i, tc := range []struct {
		fault solanasim.SocketFault
		name  string
	}{
		{solanasim.SocketDrop, "the holders node's PubSub socket dropped, and every new one right after its upgrade (`ws-drop`), for 3 s while holders change (`HOLDERS_LIVE`, `HOLDERS_REFRESH` 60 s)"},
		{solanasim.SocketStall, "the holders node's PubSub socket stalled: open, silent, no pong (`ws-stall`; `HOLDERS_WS_SILENCE` 2 s), for 3 s while holders change"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			l.node.SetSocketFault(tc.fault)
			l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 2_000_000))
			l.sellOut(t)
			during, _ := l.wait(t, "the live count ended", liveBound, func(h liveHolders) bool { return h.Method == contract.HoldersMethodGPA })
			st := l.fullStatus(t)
			status, problems, sub := st.Status, st.Problems, st.Checks.HoldersSubscription.Status
			for range 3 {
				l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 3_000_000))
				l.sellOut(t)
			}
			time.Sleep(3 * time.Second)
			l.node.SetSocketFault(solanasim.SocketOK)
			h, back := l.wait(t, "live again, with the gap's changes", liveBound, func(h liveHolders) bool {
				return l.liveExact(h) && h.Live.AnchorSlot > anchor
			})
			anchor = h.Live.AnchorSlot
			if s := l.fullStatus(t).Checks.HoldersSubscription; s.Status != "ok" || s.Connected != 1 {
				t.Errorf("holders_subscription once live again: %+v", s)
			}
			l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 4_000_000))
			_, next := l.wait(t, "a new holder after the re-anchor", liveBound, l.liveExact)
			if status != "ok" {
				t.Errorf("/api/status %s while the live count was down (%q): an enumerated count is not a fault", status, problems)
			}
			t.Logf("%s: enumerated during it (%d holders at slot %d); live again %s after the fault cleared, re-anchored at slot %d; next change published in %s",
				tc.fault, during.Holders, during.Slot, back, anchor, next)
			recordRow(t, matrixRow{Order: 22 + i, Fault: tc.name,
				During: fmt.Sprintf("before it, 5 new holders published %s after each at the median, %s at most; during it an enumeration's count (method `getProgramAccounts`), never a count the ledger did not have; then live again with the gap's 8 changes in it",
					roundDuration(took[len(took)/2]), roundDuration(took[len(took)-1])),
				Status:   fmt.Sprintf("%s (an enumerated count is not degraded); `holders_subscription` %s, then ok", status, sub),
				Recovery: back, Bound: liveBound})
		})
	}
}

// TestLiveHoldersRefused is a row of the fault matrix: the holders node
// refuses programSubscribe (method not found, as providers that restrict
// it answer). The count is enumerated every HOLDERS_REFRESH as without
// HOLDERS_LIVE, and says so.
func TestLiveHoldersRefused(t *testing.T) {
	const refresh = 2 * time.Second
	l := startLive(t, 72, refresh, nil, func(sim *simulator.Sim) {
		sim.RPC.Faults().Inject("programSubscribe", fault.Fault{Kind: fault.RPCMethodNotFound})
	})
	l.wait(t, "an enumerated count", liveBound, func(h liveHolders) bool { return h.Method == contract.HoldersMethodGPA && l.exact(h) })
	var took []time.Duration
	for range 3 {
		l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 1_000_000))
		h, d := l.wait(t, "a new holder enumerated", liveBound, func(h liveHolders) bool { return h.Method == contract.HoldersMethodGPA && l.exact(h) })
		if h.Live != nil {
			t.Fatalf("an enumerated count with a live block: %+v", h.Live)
		}
		took = append(took, d)
	}
	slices.Sort(took)
	st := l.fullStatus(t)
	state, _, _, why := st.Checks.HoldersSubscription.node(1)
	if st.Status != "ok" || state != "unsupported" || !strings.Contains(why, "programSubscribe") {
		t.Errorf("/api/status %s with programSubscribe refused (%q), holders_subscription %+v", st.Status, st.Problems, st.Checks.HoldersSubscription)
	}
	status := st.Status
	recordRow(t, matrixRow{Order: 24, Fault: "the holders node refuses `programSubscribe` (JSON-RPC -32601, as a provider that restricts it; `HOLDERS_LIVE`, `HOLDERS_REFRESH` 2 s)",
		During: fmt.Sprintf("the count enumerated every `HOLDERS_REFRESH` (method `getProgramAccounts`, `live` null); three new holders published %s at most after each",
			roundDuration(took[len(took)-1])),
		Status:   fmt.Sprintf("%s; `holders_subscription` %s, node 1 `unsupported` (%q)", status, st.Checks.HoldersSubscription.Status, why),
		Recovery: took[len(took)-1], Bound: liveBound})
}

// TestLiveHoldersResyncDifference is a row of the fault matrix: the node
// loses one notification without a word (a new holder never notified), so
// the live count is one short; the next resync (HOLDERS_RESYNC 5 s) finds
// it at one slot, publishes the enumeration's count with the difference
// and the warning, /api/status degraded, and the resync after it
// (HOLDERS_REFRESH later) agrees: ok again.
func TestLiveHoldersResyncDifference(t *testing.T) {
	const refresh = 4 * time.Second
	l := startLive(t, 73, refresh, map[string]string{"HOLDERS_RESYNC": "5s"}, nil)
	l.wait(t, "a live count", liveBound, l.liveExact)
	// After the first resync, so that the next one compares.
	l.wait(t, "a first resync", liveBound, func(h liveHolders) bool { return h.Live != nil && h.Live.Resync != nil && h.Live.Resync.Agreed })
	l.sim.RPC.Faults().Inject(solanasim.RouteProgramNotification, fault.Fault{Kind: fault.Lost, Times: 1})
	lost := time.Now()
	l.change(t)(l.sim.RPC.OpenHolder(config.DemoMint, 5_000_000))
	truth := uint64(l.sim.Holders().Holders)
	h, _ := l.wait(t, "the resync's difference", liveBound+5*time.Second, func(h liveHolders) bool {
		return l.liveExact(h) && h.Live.Resync != nil && !h.Live.Resync.Agreed
	})
	found := time.Since(lost)
	r := h.Live.Resync
	if r.Enumerated != truth || r.Live+1 != truth || len(h.Warnings) != 1 || h.Warnings[0].Code != contract.WarnHoldersLiveDiffered {
		t.Fatalf("resync %+v (the ledger: %d), warnings %+v", r, truth, h.Warnings)
	}
	status, problems := l.statusOf(t)
	if status != "degraded" || !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "live count differed") }) {
		t.Fatalf("/api/status after the difference: %s %q", status, problems)
	}
	_, healed := l.wait(t, "a resync that agrees", liveBound+refresh, func(h liveHolders) bool {
		return l.liveExact(h) && h.Live.Resync != nil && h.Live.Resync.Agreed && len(h.Warnings) == 0
	})
	deadline := time.Now().Add(liveBound)
	for {
		if s, p := l.statusOf(t); s == "ok" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/api/status still %s after the agreeing resync: %q", s, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	recordRow(t, matrixRow{Order: 25, Fault: "the holders node loses one notification without a word (a new holder never notified; `HOLDERS_RESYNC` 5 s, `HOLDERS_REFRESH` 4 s)",
		During: fmt.Sprintf("the live count one holder short until the resync, %s after the loss: it published the enumeration's %d (live %d) with `live.resync.agreed` false and `holders_live_count_differed`",
			roundDuration(found), r.Enumerated, r.Live),
		Status:   "degraded (`holders: the live count differed at its resync (…)`) until a resync agrees",
		Recovery: found + healed, Bound: 2*liveBound + refresh + 5*time.Second})
}

// TestLiveHoldersEveryKind: through /api/holders, 20 changes of each kind
// (new holder, holder sold out, holder back, balance moved, account
// opened, account closed), each published with the ledger's figures
// within liveBound of the change (HOLDERS_PUBLISH_INTERVAL 200 ms,
// HOLDERS_REFRESH a minute: only the live count explains it), by the
// live count anchored once; no read ever shows a count the ledger did not
// have. The accounts changed are those the test opened, so it knows
// which hold a balance.
func TestLiveHoldersEveryKind(t *testing.T) {
	l := startLive(t, 74, liveRefresh, nil, nil)
	first, _ := l.wait(t, "a live count", liveBound, l.liveExact)
	anchor := first.Live.AnchorSlot
	balance := map[string]uint64{} // the test's accounts: address → balance
	var order []string             // in the order they were opened
	open := func(amount uint64) {
		ch, err := l.sim.RPC.OpenHolder(config.DemoMint, amount)
		l.change(t)(ch, err)
		balance[ch.Accounts[0].Address] = amount
		order = append(order, ch.Accounts[0].Address)
	}
	pick := func(ok func(uint64) bool, not string) string {
		for _, a := range order {
			if b, open := balance[a]; open && a != not && ok(b) {
				return a
			}
		}
		t.Fatal("no account of the test fits the change")
		return ""
	}
	positive := func(b uint64) bool { return b > 0 }
	zero := func(b uint64) bool { return b == 0 }
	set := func(a string, amount uint64) {
		l.change(t)(l.sim.RPC.SetHolderBalance(config.DemoMint, a, amount))
		balance[a] = amount
	}
	closed := 0
	// A holder back and a sale need accounts of the test at 0 and above:
	// the kinds run in this order, each 20 times.
	kinds := []struct {
		name string
		do   func(i int)
	}{
		{"new holder", func(i int) { open(uint64(1_000_000 + i)) }},
		{"holder sold out", func(int) { set(pick(positive, ""), 0) }},
		{"holder back", func(i int) { set(pick(zero, ""), uint64(2_000_000+i)) }},
		{"balance moved", func(int) {
			from := pick(positive, "")
			to := pick(func(uint64) bool { return true }, from)
			l.change(t)(l.sim.RPC.MoveHolderBalance(config.DemoMint, from, to, 1))
			balance[from]--
			balance[to]++
		}},
		{"account opened", func(int) { open(0) }},
		{"account closed", func(int) {
			a := pick(zero, "")
			l.change(t)(l.sim.RPC.CloseHolderAccount(config.DemoMint, a))
			delete(balance, a)
			closed++
		}},
	}
	var took []time.Duration
	for _, k := range kinds {
		for i := range 20 {
			k.do(i)
			h, d := l.wait(t, fmt.Sprintf("%s %d published", k.name, i+1), liveBound, func(h liveHolders) bool {
				// A live count counts the accounts closed since its anchor.
				return l.liveExact(h) && h.TokenAccounts == uint64(l.sim.Holders().TokenAccounts+closed)
			})
			if h.Live.AnchorSlot != anchor {
				t.Fatalf("%s %d: re-anchored at slot %d (first %d): the count was not kept live", k.name, i+1, h.Live.AnchorSlot, anchor)
			}
			took = append(took, d)
		}
	}
	slices.Sort(took)
	t.Logf("120 changes, change to /api/holders: p50 %s, p90 %s, max %s", took[len(took)/2], took[len(took)*9/10], took[len(took)-1])
}
