package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// Metrics are the series every collector exports. Create them once per
// registry (standalone shares one between its collectors). Labels hold
// only names from this code: collector, domain, result/kind, upstream,
// method, outcome, record.
type Metrics struct {
	runs            *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	lastSuccess     *prometheus.GaugeVec
	consecutiveFail *prometheus.GaugeVec
	upstreamReqs    *prometheus.CounterVec
	upstreamLatency *prometheus.HistogramVec
	republished     *prometheus.CounterVec
	ledger          *ledgerMetrics
}

// NewMetrics registers the collector metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	ns := ops.Namespace
	return &Metrics{
		runs: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "collector_runs_total",
			Help: "Polls by collector, domain and result (ok or the error kind)."},
			[]string{"collector", "domain", "result"}),
		runDuration: f.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "collector_run_duration_seconds",
			Help:    "Duration of a poll, retries included.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}},
			[]string{"collector", "domain"}),
		lastSuccess: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "collector_last_success_timestamp_seconds",
			Help: "Unix time of the last poll that wrote the domain."},
			[]string{"collector", "domain"}),
		consecutiveFail: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "collector_consecutive_failures",
			Help: "Failed polls since the last success."},
			[]string{"collector", "domain"}),
		upstreamReqs: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_requests_total",
			Help: "Requests to upstreams by upstream, method or endpoint, and outcome."},
			[]string{"upstream", "method", "outcome"}),
		upstreamLatency: f.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "upstream_request_duration_seconds",
			Help:    "Latency of upstream requests.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}},
			[]string{"upstream", "method", "outcome"}),
		republished: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "collector_republished_total",
			Help: "Records the store had lost and the collector wrote back, unchanged: record is a domain, or status for the status record."},
			[]string{"collector", "record"}),
		ledger: newLedgerMetrics(f),
	}
}

func (m *Metrics) observeRun(collector string, d contract.Domain, run contract.Run, dur time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	if !run.OK {
		result = run.ErrorKind
	}
	m.runs.WithLabelValues(collector, string(d), result).Inc()
	m.runDuration.WithLabelValues(collector, string(d)).Observe(dur.Seconds())
	if run.OK {
		m.lastSuccess.WithLabelValues(collector, string(d)).Set(float64(run.FinishedAt.Unix()))
	}
	m.consecutiveFail.WithLabelValues(collector, string(d)).Set(float64(run.ConsecutiveFailures))
}

// initRepublish makes a collector's republished series exist at 0, so
// that the first write-back shows in increase() and rate().
func (m *Metrics) initRepublish(collector string, records ...string) {
	if m == nil {
		return
	}
	for _, rec := range records {
		m.republished.WithLabelValues(collector, rec)
	}
}

func (m *Metrics) observeRepublish(collector, record string) {
	if m == nil {
		return
	}
	m.republished.WithLabelValues(collector, record).Inc()
}

// ObserveUpstream records one upstream request. method is an RPC method or
// endpoint name from the code; outcome is "ok" or an error kind.
func (m *Metrics) ObserveUpstream(upstream, method, outcome string, dur time.Duration) {
	if m == nil {
		return
	}
	m.upstreamReqs.WithLabelValues(upstream, method, outcome).Inc()
	m.upstreamLatency.WithLabelValues(upstream, method, outcome).Observe(dur.Seconds())
}
