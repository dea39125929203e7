package supply

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
)

// The figures of a burn that changes only the last decimals:
// 987654321.123469134 before it, 987654321.123456789 after it, at 9
// decimals.
const (
	preBurn  = 987_654_321_123_469_134
	postBurn = 987_654_321_123_456_789
)

func burnToken() solanasim.Token {
	tok := classic9()
	tok.Mint, tok.Supply = key("burn"), preBurn
	return tok
}

// burned advances the simulated ledger 2,000 slots, burns, and advances
// 10 more: a node 1,000 slots behind still sees the supply before the burn.
func burned(t *testing.T, sim *solanasim.Server, mint string) {
	t.Helper()
	sim.BumpSlot(2000)
	if err := sim.SetSupply(mint, postBurn); err != nil {
		t.Fatal(err)
	}
	sim.BumpSlot(10)
}

// runErr polls d and returns its classified error (nil on success).
func (f *fixture) runErr(d contract.Domain) *collector.Error {
	err := f.c.RunOnce(context.Background(), d)
	if err == nil {
		return nil
	}
	var ce *collector.Error
	if errors.As(err, &ce) {
		return ce
	}
	return &collector.Error{Kind: "unclassified: " + err.Error()}
}

// verdicts is node number -> verdict of a cross-check.
func verdicts(cc *contract.LedgerCrossCheck) map[int]string {
	out := map[int]string{}
	if cc == nil {
		return out
	}
	for _, n := range cc.PerNode {
		out[n.Node] = n.Verdict
	}
	return out
}

// TestNeverBackwards (rule 1): once a figure is published at a slot, an
// answer from an older slot is discarded and counted, never published,
// with one node too; and it holds across a restart of the collector.
func TestNeverBackwards(t *testing.T) {
	tok := burnToken()
	f := newFixture(t, tok, fixtureOpts{nodes: 1, cfg: &Config{Commitment: CommitmentFinalized, RPCTimeout: 2 * time.Second,
		RetryAttempts: 1, RetryBase: time.Millisecond}})
	burned(t, f.sim, tok.Mint)
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)
	_, s := f.supplyDoc(t)
	published := s.Slot
	if s.TotalRaw != strconv.FormatUint(postBurn, 10) {
		t.Fatalf("published %s, want the supply after the burn", s.TotalRaw)
	}

	// The one node now answers from 1,000 slots ago: before the burn.
	f.nodes[0].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000})
	ce := f.runErr(contract.DomainSupply)
	if ce == nil || ce.Kind != contract.ErrKindNoQuorum {
		t.Fatalf("poll of a lagging node: %v, want %s", ce, contract.ErrKindNoQuorum)
	}
	if me := f.runErr(contract.DomainMetadata); me == nil || me.Kind != contract.ErrKindBehind {
		t.Fatalf("metadata poll of a lagging node: %v, want %s", me, contract.ErrKindBehind)
	}
	_, s = f.supplyDoc(t)
	if s.TotalRaw != strconv.FormatUint(postBurn, 10) || s.Slot != published {
		t.Fatalf("the supply went backwards to %s at slot %d", s.TotalRaw, s.Slot)
	}
	run := f.c.Runner().Status().Runs[contract.DomainSupply]
	if run.Ledger == nil || verdicts(run.Ledger)[1] != contract.NodeLagging || run.Ledger.PerNode[0].SlotsBehind < 1000 {
		t.Fatalf("status record's cross-check %+v, want node 1 lagging by 1,000 slots or more", run.Ledger)
	}
	for _, d := range []contract.Domain{contract.DomainSupply, contract.DomainMetadata} {
		if n := f.metric(t, "tokendata_ledger_behind_answers_total", map[string]string{"domain": string(d), "node": "1"}); n < 1 {
			t.Errorf("behind answers of %s counted %v times", d, n)
		}
	}

	// A load balancer alternating a current and a lagging node: every
	// poll either confirms the figure or is discarded, never backwards.
	f.nodes[0].SetFault(solanasim.NodeFault{Kind: solanasim.NodeBalancer, Slots: 1000})
	for range 6 {
		_ = f.c.RunOnce(context.Background(), contract.DomainSupply)
		if _, s = f.supplyDoc(t); s.TotalRaw != strconv.FormatUint(postBurn, 10) || s.Slot < published {
			t.Fatalf("behind a load balancer the supply went to %s at slot %d", s.TotalRaw, s.Slot)
		}
	}

	// A restarted collector reads the last published slot from the store.
	f.c.Close()
	f.nodes[0].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000})
	c2, err := New(f.common, officialToken(tok.Mint), testConfig(), collector.Deps{Store: store.New(f.backend, tok.Mint)})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c2.Run(ctx) }()
	waitFor(t, func() bool { _, ok := c2.Runner().Status().Runs[contract.DomainSupply]; return ok })
	cancel()
	<-done
	if run := c2.Runner().Status().Runs[contract.DomainSupply]; run.OK || run.ErrorKind != contract.ErrKindNoQuorum {
		t.Errorf("restarted collector's first poll of a lagging node: %+v", run)
	}
	if _, s = f.supplyDoc(t); s.TotalRaw != strconv.FormatUint(postBurn, 10) {
		t.Fatalf("after a restart the supply went backwards to %s", s.TotalRaw)
	}
}

// TestQuorum (rule 2): three nodes, a majority of two.
func TestQuorum(t *testing.T) {
	post := strconv.FormatUint(postBurn, 10)
	t.Run("one node answers a wrong amount", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3})
		burned(t, f.sim, tok.Mint)
		f.nodes[1].SetFault(solanasim.NodeFault{Kind: solanasim.NodeWrong, Delta: 12_345})
		f.mustRun(t, contract.DomainSupply)
		_, s := f.supplyDoc(t)
		cc := s.CrossCheck
		if s.TotalRaw != post || cc == nil || cc.State != contract.CrossCheckDegraded || cc.Agreed != 2 || cc.Quorum != 2 || cc.Nodes != 3 {
			t.Fatalf("published %s with cross-check %+v", s.TotalRaw, cc)
		}
		if v := verdicts(cc); v[1] != contract.NodeAgreed || v[2] != contract.NodeDisagreeing || v[3] != contract.NodeAgreed {
			t.Errorf("verdicts %v", v)
		}
		if cc.PerNode[1].AmountRaw != strconv.FormatUint(postBurn+12_345, 10) || len(cc.Issues) != 1 || !strings.Contains(cc.Issues[0], "node 2") {
			t.Errorf("node 2's answer %+v, issues %q", cc.PerNode[1], cc.Issues)
		}
		if n := f.metric(t, "tokendata_ledger_node_verdict", map[string]string{"node": "2", "verdict": contract.NodeDisagreeing}); n != 1 {
			t.Errorf("node 2 disagreeing gauge %v", n)
		}
		b, _ := json.Marshal(f.c.Runner().Status())
		f.assertNoSecret(t, "status record", string(b)+f.logs.String())
	})
	t.Run("no quorum keeps the last agreed figure", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3})
		f.mustRun(t, contract.DomainSupply)
		burned(t, f.sim, tok.Mint)
		// Node 1 sees the burn; node 2 answers another amount; node 3 is down.
		f.nodes[1].SetFault(solanasim.NodeFault{Kind: solanasim.NodeWrong, Delta: -7})
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeDown})
		ce := f.runErr(contract.DomainSupply)
		if ce == nil || ce.Kind != contract.ErrKindNoQuorum || ce.Ledger == nil || ce.Ledger.State != contract.CrossCheckNoQuorum {
			t.Fatalf("poll without a quorum: %+v", ce)
		}
		if v := verdicts(ce.Ledger); v[3] != contract.NodeDown {
			t.Errorf("verdicts %v", v)
		}
		if _, s := f.supplyDoc(t); s.TotalRaw != strconv.FormatUint(preBurn, 10) {
			t.Fatalf("a minority's figure was published: %s", s.TotalRaw)
		}
		f.assertNoSecret(t, "error", ce.Message+ce.Remedy)
	})
	t.Run("a burn seen by all nodes is published at once", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3})
		f.mustRun(t, contract.DomainSupply)
		burned(t, f.sim, tok.Mint)
		f.mustRun(t, contract.DomainSupply)
		if _, s := f.supplyDoc(t); s.TotalRaw != post || s.CrossCheck.State != contract.CrossCheckAgreed || s.CrossCheck.Agreed != 3 {
			t.Fatalf("after the burn: %s, %+v", s.TotalRaw, s.CrossCheck)
		}
	})
	t.Run("a burn that reaches the nodes one after another is published within two polls", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3})
		f.mustRun(t, contract.DomainSupply)
		// Nodes 2 and 3 are 50 slots behind node 1, which alone sees the burn.
		f.sim.BumpSlot(2000)
		if err := f.sim.SetSupply(tok.Mint, postBurn); err != nil {
			t.Fatal(err)
		}
		f.sim.BumpSlot(10)
		f.nodes[1].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 50})
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 50})
		f.mustRun(t, contract.DomainSupply)
		_, s := f.supplyDoc(t)
		if s.TotalRaw != strconv.FormatUint(preBurn, 10) || verdicts(s.CrossCheck)[1] != contract.NodeAhead || s.CrossCheck.State != contract.CrossCheckAgreed {
			t.Fatalf("first poll: %s, %+v", s.TotalRaw, s.CrossCheck)
		}
		f.sim.BumpSlot(100) // the lagging nodes pass the burn
		f.mustRun(t, contract.DomainSupply)
		if _, s = f.supplyDoc(t); s.TotalRaw != post || s.CrossCheck.Agreed != 3 {
			t.Fatalf("second poll: %s, %+v", s.TotalRaw, s.CrossCheck)
		}
	})
	t.Run("a node that stays ahead alone is disagreeing on the next poll", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3, refresh: 20 * time.Millisecond})
		f.mustRun(t, contract.DomainSupply)
		burned(t, f.sim, tok.Mint)
		f.nodes[1].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 50})
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 50})
		f.mustRun(t, contract.DomainSupply)
		time.Sleep(20 * time.Millisecond)
		f.mustRun(t, contract.DomainSupply)
		if _, s := f.supplyDoc(t); verdicts(s.CrossCheck)[1] != contract.NodeDisagreeing || s.CrossCheck.State != contract.CrossCheckDegraded {
			t.Fatalf("second poll: %+v", s.CrossCheck)
		}
	})
	t.Run("one node 1,000 slots behind", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3})
		burned(t, f.sim, tok.Mint)
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000})
		f.mustRun(t, contract.DomainSupply)
		_, s := f.supplyDoc(t)
		if s.TotalRaw != post || verdicts(s.CrossCheck)[3] != contract.NodeLagging || s.CrossCheck.State != contract.CrossCheckDegraded ||
			s.CrossCheck.PerNode[2].SlotsBehind != 1000 {
			t.Fatalf("published %s with %+v", s.TotalRaw, s.CrossCheck)
		}
	})
}

// TestQuorumConfig: SUPPLY_QUORUM is checked against the nodes.
func TestQuorumConfig(t *testing.T) {
	common := config.Common{SolanaRPCURLs: "http://127.0.0.1:1/a,http://127.0.0.1:1/b,http://127.0.0.1:1/c"}
	tok := officialToken(key("q"))
	for q, ok := range map[string]bool{"majority": true, "1": true, "3": true, "4": false, "0": false, "most": false} {
		cfg := testConfig()
		cfg.Quorum = q
		_, err := New(common, tok, cfg, collector.Deps{Store: store.New(store.NewMemory(), tok.Mint)})
		if (err == nil) != ok {
			t.Errorf("SUPPLY_QUORUM=%s with 3 nodes: %v", q, err)
		}
		if err != nil && !strings.Contains(err.Error(), "SUPPLY_QUORUM") {
			t.Errorf("error %q does not name SUPPLY_QUORUM", err)
		}
	}
}

// TestLaggingSameFigure: a node far behind the others is lagging even
// when the supply did not change between its slot and theirs, so that it
// answers the same figure; it still confirms that figure (its slot is at
// or after the last published one). Within SUPPLY_NODE_MAX_LAG it agrees.
func TestLaggingSameFigure(t *testing.T) {
	cfg := testConfig()
	cfg.NodeMaxLag = 150
	steady := strconv.FormatUint(preBurn, 10)
	t.Run("1,000 slots behind with a steady supply", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3, cfg: &cfg})
		f.sim.BumpSlot(2000)
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000})
		f.mustRun(t, contract.DomainSupply)
		_, s := f.supplyDoc(t)
		cc := s.CrossCheck
		if s.TotalRaw != steady || cc == nil || cc.State != contract.CrossCheckDegraded || verdicts(cc)[3] != contract.NodeLagging ||
			cc.PerNode[2].SlotsBehind != 1000 || cc.Agreed != 3 {
			t.Fatalf("published %s with cross-check %+v", s.TotalRaw, cc)
		}
		if len(cc.Issues) != 1 || !strings.Contains(cc.Issues[0], "node 3 lags 1000 slots") {
			t.Errorf("issues %q", cc.Issues)
		}
		if run := f.c.Runner().Status().Runs[contract.DomainSupply]; run.Ledger == nil || run.Ledger.State != contract.CrossCheckDegraded {
			t.Errorf("status record's cross-check %+v", run.Ledger)
		}
		if n := f.metric(t, "tokendata_ledger_node_verdict", map[string]string{"node": "3", "verdict": contract.NodeLagging}); n != 1 {
			t.Errorf("node 3 lagging gauge %v", n)
		}
	})
	t.Run("a lagging node still confirms the figure", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3, cfg: &cfg})
		f.mustRun(t, contract.DomainSupply)
		f.sim.BumpSlot(2000)
		f.nodes[1].SetFault(solanasim.NodeFault{Kind: solanasim.NodeWrong, Delta: 7})
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 1000})
		f.mustRun(t, contract.DomainSupply)
		_, s := f.supplyDoc(t)
		if v := verdicts(s.CrossCheck); s.TotalRaw != steady || v[1] != contract.NodeAgreed || v[2] != contract.NodeDisagreeing ||
			v[3] != contract.NodeLagging || s.CrossCheck.Agreed != 2 || s.CrossCheck.State != contract.CrossCheckDegraded {
			t.Fatalf("published %s with %+v", s.TotalRaw, s.CrossCheck)
		}
	})
	t.Run("within the bound", func(t *testing.T) {
		tok := burnToken()
		f := newFixture(t, tok, fixtureOpts{nodes: 3, cfg: &cfg})
		f.sim.BumpSlot(2000)
		f.nodes[2].SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 100})
		f.mustRun(t, contract.DomainSupply)
		if _, s := f.supplyDoc(t); verdicts(s.CrossCheck)[3] != contract.NodeAgreed || s.CrossCheck.State != contract.CrossCheckAgreed {
			t.Fatalf("a node 100 slots behind: %+v", s.CrossCheck)
		}
	})
}

// TestUnconfirmedFigureStaysDisagreeing: a node that keeps answering a
// figure no quorum confirms is tolerated as ahead for one poll only,
// whatever the slot it is read at in the polls after: the one-poll grace
// is for a change the others have not reached yet, not for a wrong
// figure that happens to be read a slot after the others.
func TestUnconfirmedFigureStaysDisagreeing(t *testing.T) {
	good := figure{amount: "1000", decimals: 6, program: contract.ProgramToken}
	bad := good
	bad.amount = "1007"
	poll := func(prev map[int]aheadSeen, at time.Time, slot1, slot2, slot3 uint64) crossCheck {
		answers := []nodeAnswer{{node: 1, fig: good, slot: slot1}, {node: 2, fig: bad, slot: slot2}, {node: 3, fig: good, slot: slot3}}
		return compare(answers, compareInput{quorum: 2, minSlot: 90, published: &good, maxLag: 150,
			prevAhead: prev, persist: 500 * time.Millisecond, now: at})
	}
	verdict := func(x crossCheck) string { return x.cc.PerNode[1].Verdict }
	t0 := time.Now()

	t.Run("disagreeing, then read a slot after the others", func(t *testing.T) {
		x := poll(nil, t0, 100, 100, 100) // the wrong figure at the others' slot
		if verdict(x) != contract.NodeDisagreeing {
			t.Fatalf("first poll: node 2 %s, want %s", verdict(x), contract.NodeDisagreeing)
		}
		x = poll(x.ahead, t0.Add(time.Second), 102, 103, 102)
		if verdict(x) != contract.NodeDisagreeing || x.cc.State != contract.CrossCheckDegraded {
			t.Fatalf("second poll, node 2 read a slot after the others: node 2 %s, %s %q; want disagreeing, degraded",
				verdict(x), x.cc.State, x.cc.Issues)
		}
	})
	t.Run("ahead, then disagreeing for as long as it stays so", func(t *testing.T) {
		x := poll(nil, t0, 100, 101, 100)
		if verdict(x) != contract.NodeAhead || x.cc.State != contract.CrossCheckAgreed {
			t.Fatalf("first poll: node 2 %s, %s; want ahead, agreed", verdict(x), x.cc.State)
		}
		for i := 1; i <= 3; i++ {
			x = poll(x.ahead, t0.Add(time.Duration(i)*time.Second), 100+2*uint64(i), 101+2*uint64(i), 100+2*uint64(i))
			if verdict(x) != contract.NodeDisagreeing || x.cc.State != contract.CrossCheckDegraded {
				t.Fatalf("poll %d: node 2 %s, %s %q; want disagreeing, degraded", i+1, verdict(x), x.cc.State, x.cc.Issues)
			}
		}
	})
	t.Run("a change the others reach is agreed", func(t *testing.T) {
		x := poll(nil, t0, 100, 101, 100)
		answers := []nodeAnswer{{node: 1, fig: bad, slot: 103}, {node: 2, fig: bad, slot: 103}, {node: 3, fig: bad, slot: 103}}
		x = compare(answers, compareInput{quorum: 2, minSlot: 100, published: &good, maxLag: 150,
			prevAhead: x.ahead, persist: 500 * time.Millisecond, now: t0.Add(time.Second)})
		if x.cc.State != contract.CrossCheckAgreed || x.cc.Agreed != 3 {
			t.Fatalf("the change reached by all: %s, %d agreed", x.cc.State, x.cc.Agreed)
		}
	})
}
