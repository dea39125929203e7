// Package ops is the operations listener: /metrics, /healthz, /readyz and,
// when switched on, /debug/pprof/, on a mux of their own, never on the
// public router.
package ops

import (
	"net/http"
	"net/http/pprof"
	"strconv"
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
// decides readiness (a nil ready is always ready). pprof adds
// /debug/pprof/ (OPS_PPROF); without it those paths are 404.
func Handler(reg *prometheus.Registry, ready func() bool, pprofOn bool) http.Handler {
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
	if !pprofOn {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", boundedSeconds(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", boundedSeconds(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", boundedSeconds(pprof.Trace))
	return mux
}

// MaxProfileSeconds bounds ?seconds= of a pprof profile, trace or delta
// profile: net/http/pprof runs for whatever is asked, and extends the
// server's write deadline to match.
const MaxProfileSeconds = 60

// boundedSeconds refuses a ?seconds= above MaxProfileSeconds with 400.
func boundedSeconds(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("seconds"); v != "" {
			if sec, err := strconv.ParseFloat(v, 64); err != nil || sec > MaxProfileSeconds {
				http.Error(w, "seconds: at most "+strconv.Itoa(MaxProfileSeconds), http.StatusBadRequest)
				return
			}
		}
		h(w, r)
	}
}
