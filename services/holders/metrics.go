package holders

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// metrics are the holders collector's own series (no labels).
type metrics struct {
	progress     prometheus.Gauge
	rate         prometheus.Gauge
	lastAccounts prometheus.Gauge
	lastHolders  prometheus.Gauge
	lastDuration prometheus.Gauge
	// unsupported says the holders are unavailable for want of a node that
	// can enumerate: 1 from a run that failed with
	// contract.ErrKindUnsupported until the next successful enumeration.
	unsupported prometheus.Gauge
	// crossVerdict is 1 for the verdict of the last cross-check with the
	// second holder source, 0 for the others (all 0 before the first).
	crossVerdict *prometheus.GaugeVec
	// crossDifference is |primary − secondary| of the last cross-check.
	crossDifference prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	g := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: name, Help: help})
	}
	m := &metrics{
		progress: g("holders_enumeration_accounts",
			"Token accounts decoded so far by the enumeration in progress (0 when none runs)."),
		rate: g("holders_enumeration_accounts_per_second",
			"Accounts per second of the enumeration in progress, or of the last one."),
		lastAccounts: g("holders_last_enumeration_accounts",
			"Token accounts of the last successful enumeration."),
		lastHolders: g("holders_last_enumeration_holders",
			"Holders (unique owners with a positive balance) of the last successful enumeration."),
		lastDuration: g("holders_last_enumeration_duration_seconds",
			"Duration of the last successful enumeration."),
		unsupported: g("holders_enumeration_unsupported",
			"1 when the last verdict of the RPC node is that it cannot enumerate the token's accounts "+
				"(error kind enumeration_unsupported: change HOLDERS_RPC_URL or HOLDERS_METHOD), 0 once an enumeration succeeds."),
		crossVerdict: f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "holders_crosscheck_verdict",
			Help: "1 for the verdict (agreed, disagree, not_checked) of the last cross-check of the holders count with the second " +
				"holder source (HOLDERS_CROSSCHECK_RPC_URL), 0 for the others; all 0 without one."}, []string{"verdict"}),
		crossDifference: g("holders_crosscheck_difference",
			"Holders the two counts of the last cross-check differ by."),
	}
	for _, v := range contract.HoldersVerdicts {
		m.crossVerdict.WithLabelValues(v).Set(0)
	}
	return m
}

// crossChecked records a cross-check.
func (m *metrics) crossChecked(chk contract.HoldersCheck) {
	for _, v := range contract.HoldersVerdicts {
		n := 0.0
		if v == chk.Verdict {
			n = 1
		}
		m.crossVerdict.WithLabelValues(v).Set(n)
	}
	m.crossDifference.Set(float64(chk.Difference))
}

func (m *metrics) done(doc contract.Holders, dur time.Duration) {
	m.progress.Set(0)
	m.unsupported.Set(0)
	m.lastAccounts.Set(float64(doc.TokenAccounts))
	m.lastHolders.Set(float64(doc.Holders))
	m.lastDuration.Set(dur.Seconds())
	if dur > 0 {
		m.rate.Set(float64(doc.TokenAccounts) / dur.Seconds())
	}
}

// progress reports a running enumeration: the gauges at every call, a log
// line at most every interval.
type progress struct {
	m        *metrics
	log      *slog.Logger
	interval time.Duration
	started  time.Time

	mu      sync.Mutex
	lastLog time.Time
}

func (c *Collector) newProgress(started time.Time) *progress {
	return &progress{m: c.metrics, log: c.log, interval: c.cfg.ProgressInterval, started: started, lastLog: started}
}

// report takes the number of accounts decoded so far (every query of the
// enumeration counts into one Count, so it only grows).
func (p *progress) report(total uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(p.started).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(total) / elapsed
	}
	p.m.progress.Set(float64(total))
	p.m.rate.Set(rate)
	if now.Sub(p.lastLog) >= p.interval {
		p.lastLog = now
		p.log.Info("enumerating token accounts", "accounts", total, "accounts_per_second", int64(rate),
			"elapsed", now.Sub(p.started).Round(time.Second).String())
	}
}
