package holders_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// TestUnsupportedGauge: tokendata_holders_enumeration_unsupported is 1
// from a run the node refuses (the "holders unavailable" alert reads it),
// stays 1 through other failures (they say nothing about the node's
// ability), and drops to 0 when an enumeration succeeds.
func TestUnsupportedGauge(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(100))
	f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint})
	ctx := context.Background()
	value := func() float64 {
		t.Helper()
		return testutil.ToFloat64(gauge(t, f.reg, "tokendata_holders_enumeration_unsupported"))
	}
	steps := []struct {
		name  string
		fault *fault.Fault
		want  float64
	}{
		{"before any run", nil, 0},
		{"node refuses getProgramAccounts (403)", &fault.Fault{Kind: fault.HTTP403}, 1},
		{"then an outage", &fault.Fault{Kind: fault.HTTP503}, 1},
		{"node excluded from the index", &fault.Fault{Kind: fault.RPCExcludedIndex}, 1},
		{"then a good enumeration", nil, 0},
		{"an outage alone", &fault.Fault{Kind: fault.HTTP500}, 0},
	}
	for i, st := range steps {
		if i > 0 {
			if st.fault != nil {
				s.Faults().Inject("getProgramAccounts", *st.fault)
			}
			_ = f.c.RunOnce(ctx)
			s.Faults().Clear("getProgramAccounts")
		}
		if got := value(); got != st.want {
			t.Errorf("%s: tokendata_holders_enumeration_unsupported = %v, want %v", st.name, got, st.want)
		}
	}
}
