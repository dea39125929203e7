package edge

import (
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestReadyWaitsForEveryDomainOrTheGrace: a new edge over a store that
// lacks domains (Redis restarted empty) is not ready until the collectors
// have written them back or EDGE_READY_GRACE has passed since its first
// read; then it stays ready.
func TestReadyWaitsForEveryDomainOrTheGrace(t *testing.T) {
	t.Run("every domain at the first read", func(t *testing.T) {
		h := newHarness(t, nil)
		h.writeAll()
		if h.srv.Ready() {
			t.Fatal("ready before any read of the store")
		}
		h.refresh()
		if !h.srv.Ready() {
			t.Fatal("not ready with every domain")
		}
	})

	t.Run("domains written back within the grace", func(t *testing.T) {
		h := newHarness(t, nil)
		h.write(contract.DomainMarket, edgetest.Market(), time.Second)
		h.refresh()
		h.clock.Add(10 * time.Second)
		if h.srv.Ready() {
			t.Fatal("ready with one domain of four, 10 s into a 15 s grace")
		}
		h.writeAll() // the collectors write back their last good documents
		h.refresh()
		if !h.srv.Ready() {
			t.Fatal("not ready once every domain is back")
		}
	})

	t.Run("fresh install: ready after the grace, and stays ready", func(t *testing.T) {
		h := newHarness(t, nil)
		h.refresh()
		if h.srv.Ready() {
			t.Fatal("ready at once over an empty store")
		}
		h.clock.Add(h.srv.cfg.ReadyGrace)
		if !h.srv.Ready() {
			t.Fatal("not ready after EDGE_READY_GRACE")
		}
		h.write(contract.DomainMarket, edgetest.Market(), time.Second)
		h.refresh()
		if !h.srv.Ready() {
			t.Fatal("not ready any more")
		}
	})

	t.Run("zero grace: ready at the first read", func(t *testing.T) {
		h := newHarness(t, nil, func(_ *config.Common, c *Config, _ *Deps) { c.ReadyGrace = 0 })
		h.refresh()
		if !h.srv.Ready() {
			t.Fatal("not ready with EDGE_READY_GRACE=0")
		}
	})
}

func TestReadyGraceValidated(t *testing.T) {
	c := DefaultConfig()
	if c.ReadyGrace != 15*time.Second {
		t.Errorf("default EDGE_READY_GRACE = %s, want 15s", c.ReadyGrace)
	}
	c.ReadyGrace = -time.Second
	if err := c.Validate(); err == nil {
		t.Error("negative EDGE_READY_GRACE accepted")
	}
}
