package collector_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// holdersTiming has a TTL short enough to check that a written-back key
// expires when the original would have, and a refresh no test waits for.
var holdersTiming = contract.Timing{Refresh: time.Hour, StaleAfter: time.Hour, TTL: 10 * time.Minute}

// redisRunner is a holders runner over a real redis-server; the returned
// client flushes it, as a restart without persistence would.
func redisRunner(t *testing.T, poll func(context.Context) (collector.Result, error)) (*collector.Runner, *store.Store, redis.UniversalClient, *prometheus.Registry) {
	t.Helper()
	return redisRunnerOn(t, redistest.Start(t), poll)
}

// redisRunnerOn is redisRunner over a server the test holds (to stop,
// freeze or restart it).
func redisRunnerOn(t *testing.T, srv *redistest.Server, poll func(context.Context) (collector.Result, error)) (*collector.Runner, *store.Store, redis.UniversalClient, *prometheus.Registry) {
	t.Helper()
	opts, err := store.ParseRedisURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewRedis(opts)
	t.Cleanup(func() { _ = b.Close() })
	s := store.New(b, mint)
	reg := prometheus.NewRegistry()
	r := &collector.Runner{
		Name: contract.CollectorHolders, Store: s, Metrics: collector.NewMetrics(reg),
		Log:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Backoff: collector.Backoff{Attempts: 1},
		Jobs: []collector.Job{{Domain: contract.DomainHolders, Upstream: contract.UpstreamSolanaRPC,
			Timing: holdersTiming, Poll: poll}},
	}
	return r, s, b.Client(), reg
}

func republished(reg *prometheus.Registry, record string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "tokendata_collector_republished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "record" && l.GetValue() == record {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestRestoreWritesBackWhatTheStoreLost: after a FLUSHALL the last good
// document comes back unchanged, with its original updated_at and the TTL
// left to it from that time, and the status record with it; a second
// check finds nothing to do.
func TestRestoreWritesBackWhatTheStoreLost(t *testing.T) {
	ctx := context.Background()
	read := time.Now().Add(-2 * time.Minute) // the upstream was read 2 min ago
	r, s, rc, reg := redisRunner(t, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 42}, UpdatedAt: read}, nil
	})
	if got, err := r.Restore(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any poll: Restore = %v, %v; want nothing", got, err)
	}
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	before, err := s.Read(ctx, contract.DomainHolders)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Restore(ctx); err != nil || len(got) != 0 {
		t.Fatalf("nothing lost: Restore = %v, %v", got, err)
	}

	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Restore(ctx)
	if err != nil || !slices.Equal(got, []string{"holders", "status"}) {
		t.Fatalf("Restore = %v, %v; want [holders status]", got, err)
	}
	after, err := s.Read(ctx, contract.DomainHolders)
	if err != nil {
		t.Fatalf("document not written back: %v", err)
	}
	if !after.UpdatedAt.Equal(before.UpdatedAt) || string(after.Data) != string(before.Data) || after.Source != before.Source {
		t.Errorf("written back %+v, want the original %+v", after.Envelope, before.Envelope)
	}
	// TTL from updated_at: about 10 min − 2 min, not a fresh 10 min
	if left := time.Until(read.Add(holdersTiming.TTL)); after.TTL > left+time.Second || after.TTL < left-time.Minute {
		t.Errorf("written-back TTL = %s, want about %s (from updated_at)", after.TTL, left)
	}
	sts, err := s.ReadStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run := sts[contract.CollectorHolders].Runs[contract.DomainHolders]; !run.OK || run.LastSuccessAt == nil {
		t.Errorf("status record not written back: %+v", sts)
	}
	if republished(reg, "holders") != 1 || republished(reg, "status") != 1 {
		t.Errorf("republished metric: holders %v, status %v; want 1 each",
			republished(reg, "holders"), republished(reg, "status"))
	}
	if got, err := r.Restore(ctx); err != nil || len(got) != 0 {
		t.Errorf("second check: Restore = %v, %v; want nothing", got, err)
	}
}

// TestRestoreForgetsExpiredDocuments: a document whose TTL, counted from
// its updated_at, has run out is gone for good, as the original would be.
func TestRestoreForgetsExpiredDocuments(t *testing.T) {
	ctx := context.Background()
	r, s, rc, _ := redisRunner(t, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 42}, UpdatedAt: time.Now().Add(-holdersTiming.TTL - time.Second)}, nil
	})
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Restore(ctx)
	if err != nil || slices.Contains(got, "holders") {
		t.Fatalf("Restore = %v, %v; an expired document was written back", got, err)
	}
	if _, err := s.Read(ctx, contract.DomainHolders); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read after Restore: %v, want ErrNotFound", err)
	}
}

// TestRunWritesBackThenPollsEarly runs the real loop with a short watch
// and an hour-long refresh: after a FLUSHALL the document is back, with its
// original updated_at, well before any regular poll, and the collector
// has polled again at once (here the upstream is down by then, so the
// written-back document stays).
func TestRunWritesBackThenPollsEarly(t *testing.T) {
	var polls atomic.Int32
	r, s, rc, _ := redisRunner(t, func(context.Context) (collector.Result, error) {
		if polls.Add(1) == 1 {
			return collector.Result{Doc: contract.Holders{Holders: 42}}, nil
		}
		return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, false, "down")
	})
	r.Watch = 50 * time.Millisecond
	ctx, _ := running(t, r)

	var before store.Document
	waitUntil(t, func() bool {
		var err error
		before, err = s.Read(ctx, contract.DomainHolders)
		return err == nil
	})
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return polls.Load() >= 2 })
	after, err := s.Read(ctx, contract.DomainHolders)
	if err != nil {
		t.Fatalf("document not written back: %v", err)
	}
	if !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("updated_at %s, want the original %s", after.UpdatedAt, before.UpdatedAt)
	}
}

// TestNothingInventedWithoutAGoodPoll: a collector that starts over an
// empty store with its upstream down writes no document, however often
// it checks the store.
func TestNothingInventedWithoutAGoodPoll(t *testing.T) {
	var polls atomic.Int32
	r, s, _, reg := redisRunner(t, func(context.Context) (collector.Result, error) {
		polls.Add(1)
		return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, false, "down")
	})
	r.Watch = 20 * time.Millisecond
	_, stop := running(t, r)
	waitUntil(t, func() bool { return polls.Load() >= 1 })
	time.Sleep(300 * time.Millisecond) // many checks
	stop()
	docs, errs, err := s.ReadAll(context.Background())
	if err != nil || len(docs) != 0 || len(errs) != 0 {
		t.Errorf("documents after failed polls only: %v %v %v", docs, errs, err)
	}
	if n := testutil.CollectAndCount(reg, "tokendata_collector_republished_total"); n != 2 {
		t.Errorf("%d republished series, want holders and status at 0", n)
	}
	if republished(reg, "holders") != 0 || republished(reg, "status") != 0 {
		t.Error("republished counted without a good poll")
	}
}

// TestRestartedCollectorKeepsWhatTheStoreHeld: a collector restarted
// while its upstream is down takes the store's documents as its last good
// ones, so that a later loss of the store does not lose them.
func TestRestartedCollectorKeepsWhatTheStoreHeld(t *testing.T) {
	var polls atomic.Int32
	r, s, rc, _ := redisRunner(t, func(context.Context) (collector.Result, error) {
		polls.Add(1)
		return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, false, "down")
	})
	ctx, cancel := context.WithCancel(context.Background())
	env, err := contract.NewEnvelope(mint, contract.DomainHolders, time.Now().Add(-time.Minute), contract.Source{Name: "rpc"}, contract.Holders{Holders: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, env, holdersTiming.TTL); err != nil { // the previous process's write
		t.Fatal(err)
	}
	r.Watch = 50 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitUntil(t, func() bool { return polls.Load() >= 1 })
	time.Sleep(500 * time.Millisecond) // the watch has read the store by now
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		doc, err := s.Read(ctx, contract.DomainHolders)
		return err == nil && doc.UpdatedAt.Equal(env.UpdatedAt) && string(doc.Data) == string(env.Data)
	})
}

// running runs r until the test ends or stop is called, and checks that
// Run returned nil; ctx is Run's.
func running(t *testing.T, r *collector.Runner) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return ctx, stop
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRestartedCollectorKeepsItsRecord: a collector restarted (killed in
// the middle of its work, say) takes over the status record its previous
// process left: its first record still names the last success and counts
// the failures since, and keeps the run of a domain it has not polled
// again yet, so that no document in the store is left without the run
// that wrote it.
func TestRestartedCollectorKeepsItsRecord(t *testing.T) {
	r, s, _, _ := redisRunner(t, func(context.Context) (collector.Result, error) {
		return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, false, "down")
	})
	release := make(chan struct{})
	r.Jobs = append(r.Jobs, collector.Job{Domain: contract.DomainMarket, Upstream: contract.UpstreamDexScreener,
		Timing: holdersTiming, Poll: func(ctx context.Context) (collector.Result, error) {
			select { // a slow upstream: polled, not answered yet
			case <-release:
			case <-ctx.Done():
			}
			return collector.Result{}, ctx.Err()
		}})
	ctx, cancel := context.WithCancel(context.Background())
	success := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	prev := contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
		contract.DomainHolders: {StartedAt: success, FinishedAt: success, OK: false, Upstream: contract.UpstreamSolanaRPC,
			ErrorKind: contract.ErrKindUnavailable, ConsecutiveFailures: 2, LastSuccessAt: &success},
		contract.DomainMarket: {StartedAt: success, FinishedAt: success, OK: true, Upstream: contract.UpstreamDexScreener,
			LastSuccessAt: &success},
	}}
	if err := s.WriteStatus(ctx, prev); err != nil { // the previous process's record
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		close(release)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var got contract.Status
	waitUntil(t, func() bool {
		sts, err := s.ReadStatuses(ctx)
		got = sts[contract.CollectorHolders]
		return err == nil && got.Runs[contract.DomainHolders].ConsecutiveFailures != 2
	})
	run := got.Runs[contract.DomainHolders]
	if run.ConsecutiveFailures != 3 || run.LastSuccessAt == nil || !run.LastSuccessAt.Equal(success) {
		t.Errorf("first run after the restart: %d consecutive failures, last success %v; want 3, %s",
			run.ConsecutiveFailures, run.LastSuccessAt, success)
	}
	if m, ok := got.Runs[contract.DomainMarket]; !ok || !m.OK || m.LastSuccessAt == nil || !m.LastSuccessAt.Equal(success) {
		t.Errorf("the run of the domain not polled yet: %+v (present %v), want the previous process's", m, ok)
	}
}
