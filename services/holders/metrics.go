package holders

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/services/holders/tally"
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
	// live is 1 while the published count is live (HOLDERS_LIVE);
	// liveSub is 1 for the subscription's state; liveNotes counts the
	// notifications taken; resyncDifference is the last resync's.
	live             prometheus.Gauge
	liveSub          *prometheus.GaugeVec
	liveNotes        prometheus.Counter
	resyncs          *prometheus.CounterVec
	resyncDifference prometheus.Gauge
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
	m.live = g("holders_live",
		"1 while the published holder count is live (HOLDERS_LIVE: anchored on an enumeration and kept exact by the token program's notifications), 0 otherwise.")
	m.liveSub = f.NewGaugeVec(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "holders_live_subscription",
		Help: "1 for the state (connecting, connected, unsupported) of the holders collector's programSubscribe subscription, 0 for the others; all 0 without HOLDERS_LIVE."}, []string{"state"})
	m.liveNotes = f.NewCounter(prometheus.CounterOpts{Namespace: ops.Namespace, Name: "holders_live_notifications_total",
		Help: "programNotification messages taken by the live holder count."})
	m.resyncs = f.NewCounterVec(prometheus.CounterOpts{Namespace: ops.Namespace, Name: "holders_live_resyncs_total",
		Help: "Resyncs of the live holder count, by whether the live and the enumerated counts agreed at the same slot (agreed: true or false)."}, []string{"agreed"})
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ops.Namespace, Name: "holders_live_tally_bytes",
		Help: "Memory of the live holder count's tallies (HOLDERS_LIVE), mapped outside the Go heap: in process_resident_memory_bytes, " +
			"not in go_memstats_*. One tally; two during a resync, until they are compared."},
		func() float64 { return float64(tally.MappedBytes()) })
	m.resyncDifference = g("holders_live_resync_difference",
		"Holders the live count and the enumeration of the last resync differed by (0 when they agreed).")
	for _, v := range contract.HoldersVerdicts {
		m.crossVerdict.WithLabelValues(v).Set(0)
	}
	for _, s := range liveSubStates {
		m.liveSub.WithLabelValues(s).Set(0)
	}
	m.resyncs.WithLabelValues("true")
	m.resyncs.WithLabelValues("false")
	return m
}

var liveSubStates = []string{contract.SubscriptionConnecting, contract.SubscriptionConnected, contract.SubscriptionUnsupported}

// setLive sets the subscription's state (when state is not "") and
// whether the published count is live.
func (m *metrics) setLive(state string, live bool) {
	if state != "" {
		for _, s := range liveSubStates {
			v := 0.0
			if s == state {
				v = 1
			}
			m.liveSub.WithLabelValues(s).Set(v)
		}
	}
	v := 0.0
	if live {
		v = 1
	}
	m.live.Set(v)
}

// resynced records a resync's comparison.
func (m *metrics) resynced(r contract.HoldersResync) {
	m.resyncs.WithLabelValues(strconv.FormatBool(r.Agreed)).Inc()
	m.resyncDifference.Set(float64(absDiff(r.Live, r.Enumerated)))
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
