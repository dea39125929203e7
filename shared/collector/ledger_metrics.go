package collector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// ledgerMetrics are the series of the ledger cross-check. A node is
// labelled by its number (1..N in configuration order), never by its URL.
type ledgerMetrics struct {
	verdict     *prometheus.GaugeVec
	slotsBehind *prometheus.GaugeVec
	behind      *prometheus.CounterVec
	subUp       *prometheus.GaugeVec
	notes       *prometheus.CounterVec
	reconnects  *prometheus.CounterVec
}

func newLedgerMetrics(f promauto.Factory) *ledgerMetrics {
	ns := ops.Namespace
	return &ledgerMetrics{
		verdict: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "ledger_node_verdict",
			Help: "1 for the verdict of each ledger node in the last cross-check (agreed, disagreeing, lagging, ahead, down), 0 for the others. node is the node's number in SOLANA_RPC_URLS."},
			[]string{"node", "verdict"}),
		slotsBehind: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "ledger_node_slots_behind",
			Help: "How many slots each ledger node was behind the quorum (or the last published slot) in the last cross-check; 0 when not behind."},
			[]string{"node"}),
		behind: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "ledger_behind_answers_total",
			Help: "Ledger answers discarded because they came from a slot before the figure last published (JSON-RPC -32016 or an older context slot), by collector, domain and node."},
			[]string{"collector", "domain", "node"}),
		subUp: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "ledger_subscription_up",
			Help: "1 when the supply collector's PubSub subscription to the mint on each ledger node is connected, 0 otherwise (connecting, unsupported, or off in SOLANA_WS_URLS: state says which)."},
			[]string{"node", "state"}),
		notes: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "ledger_subscription_notifications_total",
			Help: "accountNotification messages received from each ledger node's subscription to the mint (each makes the supply collector poll at once)."},
			[]string{"node"}),
		reconnects: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "ledger_subscription_reconnects_total",
			Help: "Tries of the supply collector to open each ledger node's PubSub socket again after one ended or failed (drop, silence, garbled frame, refused upgrade), failed tries included."},
			[]string{"node"}),
	}
}

// ObserveSubscription sets node's subscription series: up 1 with its
// state when connected, else 0 with the state it is in.
func (m *Metrics) ObserveSubscription(node int, state string) {
	if m == nil {
		return
	}
	n := strconv.Itoa(node)
	for _, s := range contract.SubscriptionStates {
		if s != state {
			m.ledger.subUp.DeleteLabelValues(n, s)
		}
	}
	up := 0.0
	if state == contract.SubscriptionConnected {
		up = 1
	}
	m.ledger.subUp.WithLabelValues(n, state).Set(up)
}

// ObserveNotification counts one notification of node.
func (m *Metrics) ObserveNotification(node int) {
	if m == nil {
		return
	}
	m.ledger.notes.WithLabelValues(strconv.Itoa(node)).Inc()
}

// ObserveReconnect counts one socket of node opened again.
func (m *Metrics) ObserveReconnect(node int) {
	if m == nil {
		return
	}
	m.ledger.reconnects.WithLabelValues(strconv.Itoa(node)).Inc()
}

// InitSubscriptions makes the notification and reconnect series of nodes
// 1..n exist at 0.
func (m *Metrics) InitSubscriptions(n int) {
	if m == nil {
		return
	}
	for node := 1; node <= n; node++ {
		m.ledger.notes.WithLabelValues(strconv.Itoa(node))
		m.ledger.reconnects.WithLabelValues(strconv.Itoa(node))
	}
}

// ObserveCrossCheck sets each node's verdict series from cc.
func (m *Metrics) ObserveCrossCheck(cc *contract.LedgerCrossCheck) {
	if m == nil || cc == nil {
		return
	}
	for _, n := range cc.PerNode {
		node := strconv.Itoa(n.Node)
		for _, v := range contract.NodeVerdicts {
			val := 0.0
			if v == n.Verdict {
				val = 1
			}
			m.ledger.verdict.WithLabelValues(node, v).Set(val)
		}
		m.ledger.slotsBehind.WithLabelValues(node).Set(float64(n.SlotsBehind))
	}
}

// ObserveBehind counts one answer of node (1..N) discarded because it came
// from a slot before the last published one.
func (m *Metrics) ObserveBehind(collector string, d contract.Domain, node int) {
	if m == nil {
		return
	}
	m.ledger.behind.WithLabelValues(collector, string(d), strconv.Itoa(node)).Inc()
}

// InitBehind makes the behind-answers series of nodes 1..n exist at 0 for
// each domain, so that the first discarded answer shows in increase().
func (m *Metrics) InitBehind(collector string, n int, domains ...contract.Domain) {
	if m == nil {
		return
	}
	for _, d := range domains {
		for node := 1; node <= n; node++ {
			m.ledger.behind.WithLabelValues(collector, string(d), strconv.Itoa(node))
		}
	}
}
