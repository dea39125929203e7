package edge

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// The tests' ways into the rooms the edge wires.

// refresh is a poll (no domain) or a notification of the fetch domains.
func (s *Server) refresh(ctx context.Context, fetch ...contract.Domain) {
	s.mirror.RefreshOf(ctx, fetch...)
}

func (s *Server) rerender()                        { s.mirror.Rerender() }
func (s *Server) prerender()                       { s.mirror.Prerender() }
func (s *Server) statusReportNow() view.StatusBody { return s.mirror.StatusReport() }
func (s *Server) storeUp() bool                    { return s.mirror.StoreUp() }

// metric is the value of the series name{labels...} (name, value pairs)
// in the harness's registry; 0 when it has no such series.
func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels)/2 {
				continue
			}
			for _, lp := range m.GetLabel() {
				found := false
				for i := 0; i+1 < len(labels); i += 2 {
					if labels[i] == lp.GetName() && labels[i+1] == lp.GetValue() {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func (s *Server) serveMetricsEvents(name string) prometheus.Counter {
	return s.serve.EventsCounter(name)
}
func (s *Server) serveMetricsEnded(reason string) prometheus.Counter {
	return s.serve.StreamsEndedCounter(reason)
}
func (s *Server) openStreams() int64    { return s.serve.OpenStreams() }
func (s *Server) waitingStreams() int64 { return s.serve.WaitingStreams() }
