package holders_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// TestNeverBackwards: once a count is published at a slot, a node that
// answers from an older slot is discarded and counted, and the count
// stays: getProgramAccounts by minContextSlot (-32016), DAS (which takes
// no slot bound) by its last_indexed_slot. A node caught up is counted
// again.
func TestNeverBackwards(t *testing.T) {
	for _, method := range []string{contract.HoldersMethodGPA, contract.HoldersMethodDAS} {
		t.Run(method, func(t *testing.T) {
			s, _ := sim(t, holderstest.ClassicToken(200))
			node := s.NewNode()
			url, err := node.StartOn(context.Background(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = node.Close() })
			f := newCollector(t, setup{url: url + "/?api-key=" + apiKey, mint: holderstest.ClassicMint, method: method})
			if err := f.c.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			before, _ := readHolders(t, f.store)
			if before.Slot == 0 {
				t.Fatal("the count carries no slot: nothing to compare")
			}

			s.BumpSlot(5000)
			node.SetFault(solanasim.NodeFault{Kind: solanasim.NodeLag, Slots: 10_000})
			err = f.c.RunOnce(context.Background())
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != contract.ErrKindBehind {
				t.Fatalf("a node behind the published count: %v, want %s", err, contract.ErrKindBehind)
			}
			after, _ := readHolders(t, f.store)
			if after.Slot != before.Slot || after.Holders != before.Holders {
				t.Fatalf("the count moved from %d at slot %d to %d at slot %d", before.Holders, before.Slot, after.Holders, after.Slot)
			}
			if n := metricValue(t, f.reg, "tokendata_ledger_behind_answers_total", map[string]string{"collector": "holders", "node": "1"}); n < 1 {
				t.Errorf("behind answers counted %v times", n)
			}

			node.SetFault(solanasim.NodeFault{}) // caught up: counted again
			if err := f.c.RunOnce(context.Background()); err != nil {
				t.Fatalf("a node caught up: %v", err)
			}
			if now, _ := readHolders(t, f.store); now.Slot <= before.Slot {
				t.Errorf("after catching up the count's slot is %d, not past %d", now.Slot, before.Slot)
			}
		})
	}
}

// metricValue sums the counter or gauge name over the series whose labels
// include labels.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
