package supply

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/testkit/simtest"
)

// TestHugeNodeMessageBounded: a node whose error message is 8 MiB gives a
// failed run whose status record and log lines (debug included) stay
// small and valid UTF-8; the answer is not read past its bound.
func TestHugeNodeMessageBounded(t *testing.T) {
	sim, base := simtest.StartTB(t, classic9())
	f := newFixtureOn(t, sim, base, classic9().Mint, fixtureOpts{})
	sim.Faults().Inject("*", fault.Fault{Kind: fault.HugeError})
	defer sim.Faults().ClearAll()
	if err := f.c.RunOnce(context.Background(), contract.DomainSupply); err == nil {
		t.Fatal("a run against a failing node succeeded")
	}
	sts, err := f.store.ReadStatuses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run := sts[contract.CollectorSupply].Runs[contract.DomainSupply]
	if run.OK || len(run.Error) > collector.MaxMessage+len("…") || !utf8.ValidString(run.Error) {
		t.Errorf("status run: %d bytes of error: %.200q", len(run.Error), run.Error)
	}
	if rec, _ := json.Marshal(sts); len(rec) > 4<<10 {
		t.Errorf("status record of %d bytes", len(rec))
	}
	for line := range strings.SplitSeq(strings.TrimSpace(f.logs.String()), "\n") {
		if len(line) > 2<<10 || !utf8.ValidString(line) {
			t.Errorf("log line of %d bytes: %.200s", len(line), line)
		}
	}
}
