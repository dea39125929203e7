package collector_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestFailedPollRetriedBeforeTheTick: with an hour's refresh, a poll that
// failed because its upstream was down (a pod of it moving, as in a node
// drain) is tried again within seconds, not an hour later, and the
// document is written then; a refused configuration waits for the tick.
func TestFailedPollRetriedBeforeTheTick(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		again bool
	}{
		{"upstream down", collector.Errorf(contract.ErrKindUnavailable, true, "connection refused"), true},
		{"configuration refused", collector.Errorf(contract.ErrKindConfig, false, "not a mint"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var polls atomic.Int32
			r, s, _ := newRunner(t, func(context.Context) (collector.Result, error) {
				if polls.Add(1) == 1 {
					return collector.Result{}, tc.err
				}
				return collector.Result{Doc: contract.Holders{Holders: 7}}, nil
			})
			r.Backoff = collector.Backoff{Attempts: 1}
			r.Jobs[0].Timing.Refresh = time.Hour
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = r.Run(ctx) })
			defer func() { cancel(); wg.Wait() }()

			start := time.Now()
			for time.Since(start) < 6500*time.Millisecond && polls.Load() < 2 {
				time.Sleep(50 * time.Millisecond)
			}
			switch n := polls.Load(); {
			case tc.again && n < 2:
				t.Fatalf("%d polls within %s of a failed one, want it tried again", n, time.Since(start).Round(time.Second))
			case !tc.again && n != 1:
				t.Fatalf("%d polls within 6.5 s, want the tick (an hour) to be the next", n)
			case !tc.again:
				return
			}
			if waited := time.Since(start); waited < 4*time.Second {
				t.Errorf("tried again after %s, want about 5 s", waited.Round(100*time.Millisecond))
			}
			for time.Since(start) < 10*time.Second {
				var h contract.Holders
				if doc, err := s.Read(ctx, contract.DomainHolders); err == nil && doc.Decode(&h) == nil && h.Holders == 7 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Error("the retried poll's document never reached the store")
		})
	}
}
