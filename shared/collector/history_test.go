package collector_test

import (
	"context"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

func holderSamples(t *testing.T, s *store.Store) []contract.Point {
	t.Helper()
	r, err := s.History(context.Background(), contract.MeasureHolders, contract.Window24h, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r.Points
}

// TestOnlyAPollAppendsHistory: a successful poll appends its samples
// with the document; after a FLUSHALL the written-back document appends
// nothing (the history stays empty, not a copy of the old sample), nor
// does a runner restarted over the store, nor a failed poll; the next
// good poll appends one sample, at its own time.
func TestOnlyAPollAppendsHistory(t *testing.T) {
	ctx := context.Background()
	fail := false
	count := uint64(41)
	read := time.Now().Add(-time.Minute)
	poll := func(context.Context) (collector.Result, error) {
		if fail {
			return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, false, "down")
		}
		count++
		return collector.Result{Doc: contract.Holders{Holders: count}, UpdatedAt: read,
			Samples: []contract.Sample{{Measure: contract.MeasureHolders, Value: "42"}}}, nil
	}
	r, s, rc, _ := redisRunner(t, poll)
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	got := holderSamples(t, s)
	if len(got) != 1 || got[0].V != "42" || got[0].T != read.UnixMilli() {
		t.Fatalf("after a poll: %+v, want the sample at the document's updated_at", got)
	}

	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	fail = true
	restored, err := r.Restore(ctx)
	if err != nil || len(restored) != 2 {
		t.Fatalf("Restore = %v, %v; want the document and the status written back", restored, err)
	}
	if _, err := s.Read(ctx, contract.DomainHolders); err != nil {
		t.Fatalf("document not written back: %v", err)
	}
	if got := holderSamples(t, s); len(got) != 0 {
		t.Fatalf("the write-back appended %+v", got)
	}

	// A runner restarted over the store adopts the document, and writes
	// nothing to the history while its upstream is down.
	r2 := &collector.Runner{Name: r.Name, Store: s, Metrics: r.Metrics, Log: r.Log, Backoff: r.Backoff,
		Jobs: r.Jobs, Watch: 20 * time.Millisecond}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_ = r2.Run(rctx)
	cancel()
	if err := rc.Del(ctx, contract.DocumentKey(mint, contract.DomainHolders)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if got := holderSamples(t, s); len(got) != 0 {
		t.Fatalf("a restarted runner appended %+v", got)
	}

	fail = false
	read = time.Now()
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	if got := holderSamples(t, s); len(got) != 1 || got[0].T != read.UnixMilli() {
		t.Fatalf("after the next good poll: %+v, want one sample at its time", got)
	}
}
