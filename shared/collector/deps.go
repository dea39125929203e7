package collector

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/store"
)

// Deps is what every collector's constructor takes besides its config, the
// same in a collector's own binary and in standalone.
type Deps struct {
	Store *store.Store
	// Metrics are the shared collector series (one per registry).
	Metrics *Metrics
	// Registry takes a collector's own series.
	Registry prometheus.Registerer
	Log      *slog.Logger
	// HTTPClient, when set, is used for upstream requests.
	HTTPClient *http.Client
	// Simulated marks documents and status records of demo mode.
	Simulated bool
}

// NewDeps are the dependencies of a collector's own binary: the store,
// the shared collector series registered on reg (once per registry), reg
// for the collector's own series, and the process logger.
func NewDeps(st *store.Store, reg prometheus.Registerer, log *slog.Logger) Deps {
	return Deps{Store: st, Metrics: NewMetrics(reg), Registry: reg, Log: log}
}

// NewDepsOf is NewDeps for a collector process: what it writes is marked
// simulated when its upstreams are the simulator (UPSTREAMS_SIMULATED).
func NewDepsOf(c config.Common, st *store.Store, reg prometheus.Registerer, log *slog.Logger) Deps {
	d := NewDeps(st, reg, log)
	d.Simulated = c.UpstreamsSimulated
	return d
}
