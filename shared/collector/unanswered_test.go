package collector_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// The store that does not answer: a Redis frozen, or the address of a
// Redis pod just deleted, takes connections and commands and answers
// none. Nothing of the runner may wait on it longer than StoreTimeout:
// a commit held there holds the write-back too (both take the runner's
// write lock), and a Redis that came back empty then stayed empty for as
// long as the client's retries lasted (12 s on a real node, past the
// fault matrix's 10 s).

// TestStoreThatDoesNotAnswerHoldsNothing: with Redis frozen, a good
// poll's commit and a check of the store each return within StoreTimeout
// (here 200 ms) with an error, where the client alone gives up only after
// its read timeout (2 s) and retries; and once Redis answers again the
// next check writes back what it lost.
func TestStoreThatDoesNotAnswerHoldsNothing(t *testing.T) {
	srv := redistest.Start(t)
	r, s, _, _ := redisRunnerOn(t, srv, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 42}}, nil
	})
	r.StoreTimeout = 200 * time.Millisecond
	ctx := context.Background()
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}

	srv.Freeze()
	start := time.Now()
	err := r.RunOnce(ctx, contract.DomainHolders)
	took := time.Since(start)
	if ce := (*collector.Error)(nil); !errors.As(err, &ce) || ce.Kind != contract.ErrKindStore {
		t.Errorf("a commit to a frozen store: %v, want a %s error", err, contract.ErrKindStore)
	}
	// 1.5 s: far above 200 ms, below the client's first read timeout.
	if took > 1500*time.Millisecond {
		t.Errorf("a commit to a frozen store returned after %s, want about StoreTimeout (200ms)", took)
	}
	start = time.Now()
	if _, err := r.Restore(ctx); err == nil {
		t.Error("a check of a frozen store succeeded")
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("a check of a frozen store returned after %s, want about StoreTimeout (200ms)", took)
	}

	srv.Restart() // killed frozen, back empty
	restored, err := r.Restore(ctx)
	if err != nil || len(restored) == 0 {
		t.Fatalf("after the restart: Restore = %v, %v; want the document and the status back", restored, err)
	}
	if doc, err := s.Read(ctx, contract.DomainHolders); err != nil || !strings.Contains(string(doc.Data), "42") {
		t.Errorf("after the restart: %s, %v", doc.Data, err)
	}
}

// TestWatchChecksSoonAfterTheStoreReturns: after a check that found the
// store down, the watch checks again every second rather than every
// Watch, so a Redis back empty has the documents again about a second
// later. Watch is 4 s here: the next regular check would come 4 s after
// the failed one.
func TestWatchChecksSoonAfterTheStoreReturns(t *testing.T) {
	srv := redistest.Start(t)
	r, s, _, _ := redisRunnerOn(t, srv, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 42}}, nil
	})
	logs := &logging.Buffer{}
	r.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.Watch = 4 * time.Second
	ctx, _ := running(t, r)
	waitUntil(t, func() bool { _, err := s.Read(ctx, contract.DomainHolders); return err == nil })

	srv.Stop()
	waitUntil(t, func() bool { return strings.Contains(logs.String(), "store check failed") })
	srv.Resume() // empty: no persistence
	back := time.Now()
	waitUntil(t, func() bool { _, err := s.Read(ctx, contract.DomainHolders); return err == nil })
	// 2.5 s: a retry a second after the failed check, with room; the
	// regular check would come about 4 s after it.
	if took := time.Since(back); took > 2500*time.Millisecond {
		t.Errorf("the document was back %s after the store, want within about a second", took)
	}
}

// TestPollUnderWayPollsAgainAfterAWriteBack: a poll under way when the
// watch wrote back what the store lost is not asked to poll early (it
// writes itself); when its own write then fails, it polls again at once
// instead of at its next tick (an hour here), so that what the
// write-back cannot bring, the poll's history samples, is not an hour
// late.
func TestPollUnderWayPollsAgainAfterAWriteBack(t *testing.T) {
	srv := redistest.Start(t)
	var polls atomic.Int32
	release := make(chan struct{})
	r, s, rc, reg := redisRunnerOn(t, srv, func(ctx context.Context) (collector.Result, error) {
		if polls.Add(1) == 2 {
			select { // the second poll waits while the store is lost, written back, and gone
			case <-release:
			case <-ctx.Done():
			}
		}
		return collector.Result{Doc: contract.Holders{Holders: 42}}, nil
	})
	r.Watch = 50 * time.Millisecond
	r.StoreTimeout = 300 * time.Millisecond
	ctx, _ := running(t, r)
	waitUntil(t, func() bool { _, err := s.Read(ctx, contract.DomainHolders); return err == nil })
	// A first loss: written back, and the early poll it asks for starts.
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return republished(reg, "holders") >= 1 && polls.Load() >= 2 })
	// A second loss while that poll is under way: written back again.
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return republished(reg, "holders") >= 2 })
	srv.Stop() // the poll under way cannot write
	close(release)
	waitUntil(t, func() bool { return polls.Load() >= 3 })
}
