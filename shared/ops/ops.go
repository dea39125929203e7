// Package ops is the operations listener: /metrics, /healthz, /readyz and
// /debug/pprof/ on a mux of their own, never on the public router.
package ops

import (
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tokendata/tokendata/shared/buildinfo"
)

// Namespace prefixes every metric of this project.
const Namespace = "tokendata"

// NewRegistry returns the process registry with the Go, process and
// build-info collectors on it.
func NewRegistry(service string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	bi := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace,
		Name:      "build_info",
		Help:      "Build of this process: always 1, with version, commit, Go version and service as labels.",
	}, []string{"version", "commit", "goversion", "service"})
	bi.WithLabelValues(buildinfo.Version, buildinfo.Commit, buildinfo.GoVersion(), service).Set(1)
	reg.MustRegister(bi)
	return reg
}

// Readiness is a flag the process flips; /readyz follows it.
type Readiness struct{ v atomic.Bool }

// Set marks the process ready or not.
func (r *Readiness) Set(ready bool) { r.v.Store(ready) }

// Ready reports the flag.
func (r *Readiness) Ready() bool { return r.v.Load() }

// Handler returns the ops mux. Liveness has no dependency checks; ready
// decides readiness (a nil ready is always ready).
func Handler(reg *prometheus.Registry, ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil && !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready"))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
