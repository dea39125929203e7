package supply

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/pubsub"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// subFixture is a collector over three simulated ledger nodes, running,
// with a supply refresh of a minute: only the subscriptions can explain a
// figure published within seconds.
func subFixture(t *testing.T, before func(f *fixture)) *fixture {
	t.Helper()
	cfg := testConfig()
	cfg.WSPing, cfg.WSSilence = 100*time.Millisecond, time.Second
	cfg.WSBackoff, cfg.WSBackoffMax = 50*time.Millisecond, 2*time.Second
	f := newFixture(t, burnToken(), fixtureOpts{nodes: 3, cfg: &cfg, refresh: time.Minute})
	if before != nil {
		before(f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = f.c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	f.waitFor(t, "a first supply document", func() bool { return f.raw(t, contract.DomainSupply) != nil })
	return f
}

// waitFor polls ok every 10 ms for up to 20 s.
func (f *fixture) waitFor(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("20s on, still no %s; subscriptions %+v", what, f.c.Runner().Status().Subscriptions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func (f *fixture) sub(node int) contract.LedgerSubscription {
	return f.c.Runner().Status().Subscriptions[node-1]
}

// burn burns n base units and returns how long the collector took to
// publish the supply after it.
func (f *fixture) burn(t *testing.T, n uint64) time.Duration {
	t.Helper()
	_, before := f.supplyDoc(t)
	after, err := f.sim.AdjustSupply(f.mint, -int64(n))
	if err != nil {
		t.Fatal(err)
	}
	want := jsonU64(after)
	return f.waitFor(t, "published burn to "+want+" (was "+before.TotalRaw+")", func() bool {
		_, s := f.supplyDoc(t)
		return s.TotalRaw == want
	})
}

func jsonU64(v uint64) string { b, _ := json.Marshal(v); return strings.Trim(string(b), `"`) }

func allConnected(f *fixture, nodes ...int) func() bool {
	return func() bool {
		for _, n := range nodes {
			if f.sub(n).State != contract.SubscriptionConnected {
				return false
			}
		}
		return true
	}
}

// TestSubscriptionPublishesABurnAtOnce: a burn is published within
// seconds, through the cross-check, with the supply refresh at a minute;
// the status record and the metrics show each node's subscription.
func TestSubscriptionPublishesABurnAtOnce(t *testing.T) {
	f := subFixture(t, nil)
	f.waitFor(t, "connected subscriptions", allConnected(f, 1, 2, 3))
	took := f.burn(t, 1_000_000)
	t.Logf("burn published %s after it", took)
	_, doc := f.supplyDoc(t)
	if doc.CrossCheck == nil || doc.CrossCheck.Agreed != 3 {
		t.Errorf("the burn was published without the cross-check: %+v", doc.CrossCheck)
	}
	f.waitFor(t, "every node's notification in the status record", func() bool {
		return notifiedInStore(t, f) == 3
	})
	if n, ok := value(t, f, "tokendata_ledger_subscription_up", map[string]string{"node": "2", "state": "connected"}); !ok || n != 1 {
		t.Errorf("subscription up of node 2: %v %v", n, ok)
	}
	if n, ok := value(t, f, "tokendata_ledger_subscription_notifications_total", map[string]string{"node": "1"}); !ok || n < 1 {
		t.Errorf("notifications of node 1: %v %v", n, ok)
	}
	st, _ := f.store.ReadStatuses(context.Background())
	b, _ := json.Marshal(st)
	f.assertNoSecret(t, "status record", string(b))
	f.assertNoSecret(t, "log", f.logs.String())
}

// notifiedInStore is how many nodes the status record in the store shows
// notified.
func notifiedInStore(t *testing.T, f *fixture) int {
	t.Helper()
	st, err := f.store.ReadStatuses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range st[contract.CollectorSupply].Subscriptions {
		if s.LastNotificationAt != nil && s.LastNotificationSlot > 0 {
			n++
		}
	}
	return n
}

// TestLateNotificationInTheStatusRecord: a node that tells a burn 150 ms
// after the others, once the poll they poked has published it and written
// the status record, while the chase waits to check the published slot (a
// notification of a slot already poked for pokes no other poll), still
// shows it in the status record within seconds, not at the next
// SUPPLY_REFRESH (a minute here). /api/status reads that record: the
// fault matrix's row 17 waits 10 s for node 1's notification there.
// Without recordNotifications this test fails.
func TestLateNotificationInTheStatusRecord(t *testing.T) {
	f := subFixture(t, nil)
	f.waitFor(t, "connected subscriptions", allConnected(f, 1, 2, 3))
	f.sim.Faults().Inject(solanasim.RouteAccountNotification, fault.Fault{Kind: fault.Latency, Delay: 150 * time.Millisecond, Times: 1})
	// The first change of this ledger: a node notified of anything was
	// notified of the burn.
	f.burn(t, 1_000_000)
	start := time.Now()
	for notifiedInStore(t, f) < 3 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10s after the burn was published, the status record shows %d of 3 nodes notified of it (the runner's record: %+v)",
				notifiedInStore(t, f), f.c.Runner().Status().Subscriptions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("every node's notification in the status record %s after the burn was published", time.Since(start).Round(time.Millisecond))
}

// value is the value of the series name{labels} in f's registry, and
// false when there is none.
func value(t *testing.T, f *fixture, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestSubscriptionFaults: node 1's socket is dropped, stalled, garbled in
// turn; after each the subscription reconnects (the status shows it) and
// a burn is again published within seconds. Node 3 has no PubSub: it is
// unsupported, polled as before, and the others still push.
func TestSubscriptionFaults(t *testing.T) {
	f := subFixture(t, func(f *fixture) { f.nodes[2].SetSocketFault(solanasim.SocketOff) })
	f.waitFor(t, "connected subscriptions", allConnected(f, 1, 2))
	f.waitFor(t, "node 3 unsupported", func() bool { return f.sub(3).State == contract.SubscriptionUnsupported })
	if e := f.sub(3).Error; !strings.Contains(e, "HTTP 405") {
		t.Errorf("node 3's error: %q", e)
	}
	for _, fault := range []solanasim.SocketFault{solanasim.SocketDrop, solanasim.SocketStall, solanasim.SocketGarble} {
		before := f.sub(1).Reconnects
		f.nodes[0].SetSocketFault(fault)
		f.waitFor(t, string(fault)+": node 1 reconnecting", func() bool { return f.sub(1).Reconnects > before })
		f.nodes[0].SetSocketFault(solanasim.SocketOK)
		f.waitFor(t, string(fault)+": node 1 connected again", allConnected(f, 1, 2))
		burnt := time.Now()
		took := f.burn(t, 777)
		t.Logf("%s: burn published %s after it; node 1: %+v", fault, took, f.sub(1))
		f.waitFor(t, string(fault)+": node 1's notification of the burn", func() bool {
			at := f.sub(1).LastNotificationAt
			return at != nil && !at.Before(burnt)
		})
	}
	if n, ok := value(t, f, "tokendata_ledger_subscription_reconnects_total", map[string]string{"node": "1"}); !ok || n < 3 {
		t.Errorf("reconnects of node 1: %v", n)
	}
	if n, ok := value(t, f, "tokendata_ledger_subscription_up", map[string]string{"node": "3", "state": "unsupported"}); !ok || n != 0 {
		t.Errorf("node 3's up series: %v %v", n, ok)
	}
	f.assertNoSecret(t, "log", f.logs.String())
}

// FuzzSocketFrames: whatever a node sends, the frame readers return a
// subscription id or a slot above 0, or an error; never a panic.
func FuzzSocketFrames(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":23784,"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"accountNotification","params":{"result":{"context":{"slot":5199307},"value":{"lamports":1}},"subscription":23784}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"accountNotification","params":{"result":"garbled","subscription":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"accountNotif`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if id, err := pubsub.Subscribed(msg, "accountSubscribe"); err == nil && id == 0 {
			t.Fatalf("subscribed %q: id 0 without an error", msg)
		}
		if slot, err := notification(msg, 23784); err == nil && slot == 0 {
			t.Fatalf("notification %q: slot 0 without an error", msg)
		}
	})
}

// TestSocketFrames: the readers take the real shapes and refuse the
// others.
func TestSocketFrames(t *testing.T) {
	if id, err := pubsub.Subscribed([]byte(`{"jsonrpc":"2.0","result":23784,"id":1}`), "accountSubscribe"); err != nil || id != 23784 {
		t.Errorf("subscribe answer: %d %v", id, err)
	}
	var refused *pubsub.RefusedError
	if _, err := pubsub.Subscribed([]byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`), "accountSubscribe"); !errors.As(err, &refused) {
		t.Errorf("a refused accountSubscribe: %v", err)
	}
	good := `{"jsonrpc":"2.0","method":"accountNotification","params":{"result":{"context":{"slot":5199307},"value":{"lamports":1}},"subscription":23784}}`
	if slot, err := notification([]byte(good), 23784); err != nil || slot != 5199307 {
		t.Errorf("notification: %d %v", slot, err)
	}
	for _, bad := range []string{
		strings.Replace(good, "23784", "1", 1),                  // another subscription
		strings.Replace(good, `"slot":5199307`, `"slot":0`, 1),  // no slot
		strings.Replace(good, `,"value":{"lamports":1}`, ``, 1), // no value
		strings.Replace(good, "accountNotification", "slotNotification", 1),
		`{"jsonrpc":"2.0","method":"accountNotification","params":{"result":"garbled","subscription":"x"}}`,
		`{"jsonrpc":"2.0","method":"accountNotif`,
	} {
		if slot, err := notification([]byte(bad), 23784); err == nil {
			t.Errorf("%s: taken (slot %d)", bad, slot)
		}
	}
}
