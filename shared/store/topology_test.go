package store_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// The store on the engines users grow into: a real Redis Cluster (six
// redis-server in cluster mode) and a real Sentinel setup, each running
// the contract and history suites, and each losing its master under
// writes.

// sharedFactory returns a factory over one running topology: each backend
// is a new client over the emptied servers.
func sharedFactory(url string, flush func()) backendFactory {
	return func(t *testing.T) (store.Backend, *redistest.Server) {
		flush()
		opts, err := store.ParseRedisURL(url)
		if err != nil {
			t.Fatal(err)
		}
		b := store.NewRedis(opts)
		t.Cleanup(func() { _ = b.Close() })
		return b, nil
	}
}

func TestContractCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	f := sharedFactory(c.URL(), c.FlushAll)
	t.Run("contract", func(t *testing.T) { runContract(t, f) })
	t.Run("history", func(t *testing.T) { runHistory(t, f) })
}

func TestContractSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	f := sharedFactory(s.URL(), func() {
		if _, err := redistest.Cli(s.MasterAddr(), "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("contract", func(t *testing.T) { runContract(t, f) })
	t.Run("history", func(t *testing.T) { runHistory(t, f) })
}

// TestClusterUpdatesStartAtTheSubscription: on a Redis Cluster a new
// subscription receives the updates of the writes after Updates returned,
// and none of those that returned before it was called, however many
// came just before. Every announcement goes to the node the
// subscriptions are on (the master of the channel's slot), where it is
// delivered at once; go-redis sent each PUBLISH, a command without keys,
// to the next master in turn, and the two of three sent elsewhere reached
// the channel's master later, over the cluster bus: a subscription made
// after a burst of writes received some of their updates (the contract's
// "updates are published after each write" got the "holders" of the
// subtest before it, 4 runs in 6 on a busy machine).
func TestClusterUpdatesStartAtTheSubscription(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := redistest.StartCluster(t)
	for _, a := range c.Addrs() {
		if _, err := redistest.Cli(a, "CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	newStore := func() *store.Store {
		opts, err := store.ParseRedisURL(c.URL())
		if err != nil {
			t.Fatal(err)
		}
		b := store.NewRedis(opts)
		t.Cleanup(func() { _ = b.Close() })
		return store.New(b, mint)
	}
	w := newStore()
	const rounds, burst = 10, 100
	for round := range rounds {
		for i := range burst {
			if err := w.Write(ctx, envelope(t, contract.DomainHolders, i), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		// A new client, as an edge that starts: its subscription must not
		// see the burst, only the write after it.
		sctx, stop := context.WithCancel(ctx)
		updates, closeSub, err := newStore().Updates(sctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ctx, envelope(t, contract.DomainSupply, round), time.Hour); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-updates:
			if d != contract.DomainSupply {
				t.Errorf("round %d: the new subscription received %q, announced before it, before the supply written after it", round, d)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("round %d: no update of the write after Updates returned", round)
		}
		stop()
		_ = closeSub()
	}

	// Why: every PUBLISH went to the channel's master.
	channelMaster := c.MasterOf(contract.UpdatesChannel(mint))
	want := rounds * (burst + 1)
	for _, a := range c.Addrs() {
		info, err := redistest.Cli(a, "INFO", "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		for line := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(line, "cmdstat_publish:calls="); ok {
				calls, _ = strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			}
		}
		switch {
		case a == channelMaster && calls != want:
			t.Errorf("the channel's master %s took %d PUBLISH, want all %d", a, calls, want)
		case a != channelMaster && calls != 0:
			t.Errorf("%s, not the channel's master (%s), took %d PUBLISH", a, channelMaster, calls)
		}
	}
}

// writer commits the supply document every interval and records when
// each attempt failed or succeeded.
type writer struct {
	mu       sync.Mutex
	failures int
	lastOK   time.Time
	firstOK  map[int]time.Time // per generation: the first success after mark
	gen      int
}

// mark starts a new generation: firstOK of it is the first success after.
func (w *writer) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	return w.gen
}

func (w *writer) firstOKOf(gen int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.firstOK[gen]
	return at, ok
}

func (w *writer) run(ctx context.Context, s *store.Store, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for v := 1; ctx.Err() == nil; v++ {
		env, err := contract.NewEnvelope(mint, contract.DomainSupply, time.Now(), contract.Source{Name: "test", Slot: uint64(v)},
			contract.Holders{Holders: uint64(v), Method: contract.HoldersMethodGPA})
		if err != nil {
			panic(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = s.Commit(wctx, env, time.Hour, contract.Status{Collector: contract.CollectorSupply},
			contract.Sample{Measure: contract.MeasureSupply, Value: "1000"})
		cancel()
		w.mu.Lock()
		if err != nil {
			w.failures++
		} else {
			now := time.Now()
			w.lastOK = now
			if _, ok := w.firstOK[w.gen]; !ok {
				w.firstOK[w.gen] = now
			}
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// TestClusterMasterKilled kills the master that holds the supply document
// while a writer commits it every 100 ms (document, status record and a
// history sample, as a collector does), and a subscriber listens for the
// updates. The cluster promotes the replica within a few node timeouts;
// the writer's next write must land within two seconds of that, not after
// the client's periodic reload of the slot map (60 s by default), and the
// updates must reach the subscriber again.
func TestClusterMasterKilled(t *testing.T) {
	c := redistest.StartCluster(t)
	runFailover(t, c.URL(), func() string {
		old := c.MasterOf(contract.DocumentKey(mint, contract.DomainSupply))
		c.Kill(old)
		return old
	}, func() time.Duration { return c.WaitHealthy(30 * time.Second) })
}

// TestSentinelMasterKilled is TestClusterMasterKilled on Sentinel: the
// sentinels promote the replica; the writer's next write lands on it.
func TestSentinelMasterKilled(t *testing.T) {
	s := redistest.StartSentinel(t)
	var old string
	runFailover(t, s.URL(), func() string {
		old = s.KillMaster()
		return old
	}, func() time.Duration {
		d, _ := s.WaitFailover(old, 30*time.Second)
		return d
	})
}

func runFailover(t *testing.T, url string, kill func() string, failover func() time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts, err := store.ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewRedis(opts)
	defer func() { _ = b.Close() }()
	s := store.New(b, mint)
	updates, closeSub, err := s.Updates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeSub() }()

	w := &writer{firstOK: map[int]time.Time{}}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { w.run(ctx, s, 100*time.Millisecond) })
	select {
	case <-updates:
	case <-time.After(10 * time.Second):
		t.Fatal("no update before the fault")
	}

	killed := time.Now()
	old := kill()
	took := failover()
	gen := w.mark()
	promoted := time.Now()
	drain(updates)
	const bound = 2 * time.Second
	deadline := time.After(bound + 10*time.Second)
	var landed time.Time
	for landed.IsZero() {
		select {
		case <-deadline:
			t.Fatalf("no write landed within %s of the failover (killed %s at %s, failover took %s)", bound+10*time.Second, old, killed.Format(time.TimeOnly), took)
		case <-time.After(20 * time.Millisecond):
			landed, _ = w.firstOKOf(gen)
		}
	}
	after := landed.Sub(promoted)
	select {
	case <-updates:
	case <-time.After(bound + 5*time.Second):
		t.Fatal("no update reached the subscriber after the failover")
	}
	notified := time.Since(promoted)
	t.Logf("master %s killed; failover took %s; first write %s after it; updates resumed %s after it", old, took.Round(time.Millisecond), after.Round(time.Millisecond), notified.Round(time.Millisecond))
	if after > bound {
		t.Errorf("the first write landed %s after the failover, more than %s", after.Round(time.Millisecond), bound)
	}
}

func drain(ch <-chan contract.Domain) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
