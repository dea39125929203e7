package edge

import (
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

// The scenario of the supply collector's ledger subscriptions:
// node 1 subscribed and notified, node 2 reconnecting after its socket
// went silent, node 3 without PubSub. /api/status shows them under
// checks.ledger_subscriptions, degraded there, and stays ok: polling is
// the safety net.
func init() {
	scenarios["ledger-subscriptions"] = func(h *harness) {
		h.writeAll()
		noted := t0.Add(-4 * time.Second)
		for _, s := range edgetest.Statuses(t0.Add(-10e9)) {
			if s.Collector == contract.CollectorSupply {
				s.Subscriptions = []contract.LedgerSubscription{
					{Node: 1, State: contract.SubscriptionConnected, Since: t0.Add(-time.Hour), LastNotificationAt: &noted,
						LastNotificationSlot: 312345678, Reconnects: 2},
					{Node: 2, State: contract.SubscriptionConnecting, Since: t0.Add(-20 * time.Second), Reconnects: 5,
						Error: "the socket was silent for 30s (no message, no pong)"},
					{Node: 3, State: contract.SubscriptionUnsupported, Since: t0.Add(-time.Hour), Reconnects: 1,
						Error: "the node refused the WebSocket upgrade with HTTP 405: no PubSub on this URL (polled only)"},
				}
			}
			if err := h.store.WriteStatus(t0Ctx, s); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}
