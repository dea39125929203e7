package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestLedgerSubscriptionsCheck: /api/status shows each node's ledger
// subscription, counts the connected ones among those with a WebSocket,
// redacts errors, and never turns the status degraded for them.
func TestLedgerSubscriptionsCheck(t *testing.T) {
	in := inputs(t)
	noted := t0.Add(-3 * time.Second)
	statuses := map[string]contract.Status{}
	for _, s := range edgetest.Statuses(t0.Add(-10 * time.Second)) {
		statuses[s.Collector] = s
	}
	base := in.StatusReport(state(t, 30*time.Second), &snapshot.StoreHealth{OK: true, CheckedAt: t0, LastOK: t0}, statuses, "memory", t0)
	if base.Checks.LedgerSubscriptions != nil {
		t.Fatalf("a record without subscriptions: %+v", base.Checks.LedgerSubscriptions)
	}
	for _, tc := range []struct {
		states    []string
		want      string
		connected int
	}{
		{[]string{"connected", "connected", "off"}, StatusOK, 2},
		{[]string{"connected", "connecting", "unsupported"}, StatusDegraded, 1},
		{[]string{"connecting", "unsupported", "off"}, StatusDown, 0},
		{[]string{"off", "off"}, "off", 0},
	} {
		sup := statuses[contract.CollectorSupply]
		sup.Subscriptions = nil
		for i, st := range tc.states {
			s := contract.LedgerSubscription{Node: i + 1, State: st, Since: t0.Add(-time.Minute), Reconnects: i}
			if st == contract.SubscriptionConnected {
				s.LastNotificationAt, s.LastNotificationSlot = &noted, 312345678
			} else if st != contract.SubscriptionOff {
				s.Error = "dial https://rpc.example/?api-key=k3yLEAKED0001 failed"
			}
			sup.Subscriptions = append(sup.Subscriptions, s)
		}
		all := map[string]contract.Status{}
		for k, v := range statuses {
			all[k] = v
		}
		all[contract.CollectorSupply] = sup
		b := in.StatusReport(state(t, 30*time.Second), &snapshot.StoreHealth{OK: true, CheckedAt: t0, LastOK: t0}, all, "memory", t0)
		c := b.Checks.LedgerSubscriptions
		if c == nil || c.Status != tc.want || c.Connected != tc.connected || c.Nodes != len(tc.states) || len(c.PerNode) != len(tc.states) {
			t.Fatalf("%v: %+v, want %s with %d connected", tc.states, c, tc.want, tc.connected)
		}
		if b.Status != base.Status || len(b.Problems) != len(base.Problems) {
			t.Errorf("%v: subscriptions changed the status: %s %q, was %s %q", tc.states, b.Status, b.Problems, base.Status, base.Problems)
		}
		js, _ := json.Marshal(c)
		if strings.Contains(string(js), "k3yLEAKED0001") || strings.Contains(string(js), "rpc.example") {
			t.Errorf("a subscription error leaks the URL: %s", js)
		}
		if p := c.PerNode[0]; p.State == contract.SubscriptionConnected && (p.LastNotificationSlot == nil || *p.LastNotificationSlot != 312345678 || p.LastNotificationAt == nil) {
			t.Errorf("node 1's last notification: %s", js)
		}
	}
}
