package mirror

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// metrics are the mirror's series: reads of the store, renders, and the
// age and freshness of what it holds. Every label value comes from this
// code.
type metrics struct {
	refreshes *prometheus.CounterVec
	storeErrs prometheus.Counter
	renders   prometheus.Counter
	// boundaries counts the views put in when a domain crossed its
	// stale-after or TTL, by how: "ahead" (rendered before the boundary
	// and swapped in) or "rendered" (at the boundary: none rendered ahead
	// fitted, and the first request or timer past it rendered it).
	boundaries *prometheus.CounterVec
}

// The how label values of tokendata_edge_snapshot_boundaries_total.
const (
	BoundaryAhead    = "ahead"
	BoundaryRendered = "rendered"
)

func newMetrics(reg prometheus.Registerer, s *Mirror) *metrics {
	f := promauto.With(reg)
	ns := ops.Namespace
	m := &metrics{
		refreshes: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "snapshot_refreshes_total",
			Help: "Reads of the store into the snapshot, by result (ok or error)."}, []string{"result"}),
		storeErrs: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "store_errors_total",
			Help: "Failed reads of the store (Redis unreachable, timeout)."}),
		renders: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "snapshot_renders_total",
			Help: "Times the pre-rendered bodies were rebuilt (data changed or a domain crossed stale-after or its TTL)."}),
		boundaries: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "snapshot_boundaries_total",
			Help: "Views put in when a domain crossed its stale-after or TTL, by how: ahead (rendered before the boundary and swapped in, no request waits) or rendered (rendered at the boundary)."},
			[]string{"how"}),
	}
	for _, d := range contract.Domains {
		labels := prometheus.Labels{"domain": string(d)}
		f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "data_age_seconds", ConstLabels: labels,
			Help: "Age of the domain's document in the snapshot (now − updated_at); -1 when the edge has none."},
			func() float64 { return s.dataAge(d) })
		f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "data_stale", ConstLabels: labels,
			Help: "1 when the domain's document is past its stale-after, 0 when fresh, -1 when the edge has none."},
			func() float64 { return s.dataStale(d) })
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "store_up",
		Help: "1 when the last read of the store succeeded."}, func() float64 { return boolFloat(s.StoreUp()) })
	reg.MustRegister(newTokenCollector(s))
	for _, how := range []string{BoundaryAhead, BoundaryRendered} {
		m.boundaries.WithLabelValues(how)
	}
	return m
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
