package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

const mint = "So11111111111111111111111111111111111111112"

// go-redis redials a dead node from a goroutine of its pool that sleeps a
// second between tries and ends at its next try after Close: a client
// closed while a node of its cluster is down leaves it behind that long.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// backendFactory returns a fresh, empty backend and, for Redis, the server.
type backendFactory func(t *testing.T) (store.Backend, *redistest.Server)

func memoryFactory(t *testing.T) (store.Backend, *redistest.Server) {
	b := store.NewMemory()
	t.Cleanup(func() { _ = b.Close() })
	return b, nil
}

func redisFactory(t *testing.T) (store.Backend, *redistest.Server) {
	srv := redistest.Start(t)
	opts, err := store.ParseRedisURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewRedis(opts)
	t.Cleanup(func() { _ = b.Close() })
	return b, srv
}

func TestContractMemory(t *testing.T) { runContract(t, memoryFactory) }
func TestContractRedis(t *testing.T)  { runContract(t, redisFactory) }

func envelope(t *testing.T, d contract.Domain, v int) contract.Envelope {
	t.Helper()
	env, err := contract.NewEnvelope(mint, d, time.Now(), contract.Source{Name: "test", Slot: uint64(v)},
		contract.Holders{Holders: uint64(v), Method: contract.HoldersMethodGPA})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func holdersOf(t *testing.T, doc store.Document) uint64 {
	t.Helper()
	var h contract.Holders
	if err := doc.Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.Holders
}

func runContract(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()

	t.Run("write then read with remaining ttl", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if _, err := s.Read(ctx, contract.DomainHolders); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("read before write: %v, want ErrNotFound", err)
		}
		env := envelope(t, contract.DomainHolders, 42)
		if err := s.Write(ctx, env, time.Hour); err != nil {
			t.Fatal(err)
		}
		doc, err := s.Read(ctx, contract.DomainHolders)
		if err != nil {
			t.Fatal(err)
		}
		if got := holdersOf(t, doc); got != 42 {
			t.Errorf("holders = %d, want 42", got)
		}
		if !doc.UpdatedAt.Equal(env.UpdatedAt) || doc.Source.Slot != 42 || doc.Mint != mint {
			t.Errorf("envelope not kept: %+v", doc.Envelope)
		}
		if doc.TTL <= 59*time.Minute || doc.TTL > time.Hour {
			t.Errorf("remaining ttl = %s, want just under 1h", doc.TTL)
		}
	})

	t.Run("expiry", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, envelope(t, contract.DomainMarket, 1), 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx, contract.DomainMarket); err != nil {
			t.Fatalf("read before expiry: %v", err)
		}
		time.Sleep(450 * time.Millisecond)
		if _, err := s.Read(ctx, contract.DomainMarket); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("read after expiry: %v, want ErrNotFound", err)
		}
	})

	t.Run("overwrite replaces value and ttl", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, 1), 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, 2), time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(450 * time.Millisecond)
		doc, err := s.Read(ctx, contract.DomainHolders)
		if err != nil {
			t.Fatalf("overwritten value expired with the old ttl: %v", err)
		}
		if got := holdersOf(t, doc); got != 2 {
			t.Errorf("holders = %d, want 2", got)
		}
	})

	t.Run("read all in one call", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		for i, d := range []contract.Domain{contract.DomainSupply, contract.DomainHolders} {
			if err := s.Write(ctx, envelope(t, d, i+1), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		docs, errs, err := s.ReadAll(ctx)
		if err != nil || len(errs) != 0 {
			t.Fatal(err, errs)
		}
		if len(docs) != 2 || docs[contract.DomainSupply].Domain != contract.DomainSupply ||
			docs[contract.DomainHolders].Domain != contract.DomainHolders {
			t.Fatalf("ReadAll = %v", docs)
		}
		if _, ok := docs[contract.DomainMarket]; ok {
			t.Error("absent domain reported present")
		}
	})

	t.Run("unknown schema_version and garbage are reported, never crash", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		future := fmt.Sprintf(`{"schema_version":2,"domain":"market","mint":%q,"updated_at":"2030-01-01T00:00:00Z","source":{},"data":{"new":true}}`, mint)
		if err := b.Set(ctx, contract.DocumentKey(mint, contract.DomainMarket), []byte(future), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := b.Set(ctx, contract.DocumentKey(mint, contract.DomainSupply), []byte("not json"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, 7), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx, contract.DomainMarket); !errors.Is(err, contract.ErrUnknownSchema) {
			t.Errorf("read of schema 2: %v, want ErrUnknownSchema", err)
		}
		docs, errs, err := s.ReadAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(errs[contract.DomainMarket], contract.ErrUnknownSchema) || errs[contract.DomainSupply] == nil {
			t.Errorf("errs = %v", errs)
		}
		if len(docs) != 1 || holdersOf(t, docs[contract.DomainHolders]) != 7 {
			t.Errorf("good document not served beside bad ones: %v", docs)
		}
	})

	t.Run("write refuses invalid envelopes", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		bad := []contract.Envelope{
			{},
			func() contract.Envelope { e := envelope(t, contract.DomainMarket, 1); e.SchemaVersion = 9; return e }(),
			func() contract.Envelope { e := envelope(t, contract.DomainMarket, 1); e.Mint = "other"; return e }(),
			func() contract.Envelope { e := envelope(t, contract.DomainMarket, 1); e.Domain = "prices"; return e }(),
		}
		for i, e := range bad {
			if err := s.Write(ctx, e, time.Hour); err == nil {
				t.Errorf("bad envelope %d written", i)
			}
		}
		if err := s.Write(ctx, envelope(t, contract.DomainMarket, 1), 0); err == nil {
			t.Error("write without ttl accepted")
		}
		if docs, _, _ := s.ReadAll(ctx); len(docs) != 0 {
			t.Errorf("refused writes left data: %v", docs)
		}
	})

	t.Run("status records", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		now := time.Now().UTC().Truncate(time.Millisecond)
		st := contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
			contract.DomainHolders: {StartedAt: now, FinishedAt: now, ErrorKind: contract.ErrKindUnsupported,
				Error: "node refuses getProgramAccounts", ConsecutiveFailures: 3},
		}}
		if err := s.WriteStatus(ctx, st); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		run := got[contract.CollectorHolders].Runs[contract.DomainHolders]
		if run.ConsecutiveFailures != 3 || run.ErrorKind != contract.ErrKindUnsupported || !run.StartedAt.Equal(now) {
			t.Errorf("status = %+v", got)
		}
		if _, ok := got[contract.CollectorMarket]; ok {
			t.Error("absent status reported")
		}
	})

	t.Run("missing reports absent and expired keys", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, envelope(t, contract.DomainSupply, 1), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, envelope(t, contract.DomainMetadata, 1), 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteStatus(ctx, contract.Status{Collector: contract.CollectorSupply}); err != nil {
			t.Fatal(err)
		}
		docs, status, err := s.Missing(ctx, contract.CollectorSupply, contract.DomainSupply, contract.DomainMetadata, contract.DomainMarket)
		if err != nil || status || !slices.Equal(docs, []contract.Domain{contract.DomainMarket}) {
			t.Fatalf("Missing = %v, status %v, %v; want [market], false", docs, status, err)
		}
		if _, status, _ := s.Missing(ctx, contract.CollectorMarket); !status {
			t.Error("absent status record reported present")
		}
		if docs, status, err := s.Missing(ctx, ""); err != nil || docs != nil || status {
			t.Errorf("Missing of nothing = %v, %v, %v", docs, status, err)
		}
		time.Sleep(450 * time.Millisecond)
		docs, _, err = s.Missing(ctx, "", contract.DomainSupply, contract.DomainMetadata)
		if err != nil || !slices.Equal(docs, []contract.Domain{contract.DomainMetadata}) {
			t.Fatalf("after metadata's TTL: Missing = %v, %v; want [metadata]", docs, err)
		}
	})

	t.Run("commit writes the document and the status record at one instant", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		updates, closeSub, err := s.Updates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = closeSub() }()
		// The run's ConsecutiveFailures carries the document's number, so
		// that a reader can tell which commit each value comes from.
		status := func(n int) contract.Status {
			return contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
				contract.DomainHolders: {OK: true, ConsecutiveFailures: n}}}
		}
		if err := s.Commit(ctx, envelope(t, contract.DomainHolders, 1), time.Hour, status(1)); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-updates:
			if d != contract.DomainHolders {
				t.Errorf("update = %q", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no update received")
		}
		doc, err := s.Read(ctx, contract.DomainHolders)
		if err != nil || holdersOf(t, doc) != 1 || doc.TTL <= 59*time.Minute {
			t.Fatalf("document after commit: %+v, %v", doc, err)
		}
		sts, err := s.ReadStatuses(ctx)
		if err != nil || sts[contract.CollectorHolders].Runs[contract.DomainHolders].ConsecutiveFailures != 1 {
			t.Fatalf("status after commit: %+v, %v", sts, err)
		}
		if _, status, _ := s.Missing(ctx, contract.CollectorHolders); status {
			t.Error("status record absent after commit")
		}

		// A reader that reads the document first, then the status record,
		// never sees a status record older than the document: a commit is
		// never half done. One MGET reads both at one instant; on a Redis
		// Cluster, whose MGET is one read per node at once, the reader
		// reads the document, then the status record, as the edge does.
		keys := []string{contract.DocumentKey(mint, contract.DomainHolders), contract.StatusKey(mint, contract.CollectorHolders)}
		read := func() ([]store.Value, error) { return b.MGet(ctx, store.DefaultMaxValueBytes, keys...) }
		if r, ok := b.(*store.Redis); ok {
			if _, cluster := r.Client().(*redis.ClusterClient); cluster {
				read = func() ([]store.Value, error) {
					doc, err := b.MGet(ctx, store.DefaultMaxValueBytes, keys[0])
					if err != nil {
						return nil, err
					}
					st, err := b.MGet(ctx, store.DefaultMaxValueBytes, keys[1])
					return append(doc, st...), err
				}
			}
		}
		var wg sync.WaitGroup
		var done atomic.Bool
		var reads, torn atomic.Int64
		wg.Go(func() {
			for !done.Load() {
				vals, err := read()
				if err != nil {
					t.Error(err)
					return
				}
				var env contract.Envelope
				var h contract.Holders
				var st contract.Status
				if json.Unmarshal(vals[0].Data, &env) != nil || env.Decode(&h) != nil || json.Unmarshal(vals[1].Data, &st) != nil {
					t.Errorf("undecodable values: %q, %q", vals[0].Data, vals[1].Data)
					return
				}
				if n := st.Runs[contract.DomainHolders].ConsecutiveFailures; uint64(n) < h.Holders {
					torn.Add(1)
				}
				reads.Add(1)
			}
		})
		for n := 2; n <= 300; n++ {
			if err := s.Commit(ctx, envelope(t, contract.DomainHolders, n), time.Hour, status(n)); err != nil {
				t.Fatal(err)
			}
		}
		done.Store(true)
		wg.Wait()
		if torn.Load() > 0 {
			t.Errorf("%d of %d reads saw a document without the status record committed with it", torn.Load(), reads.Load())
		}
		if err := s.Commit(ctx, envelope(t, contract.DomainHolders, 1), 0, status(1)); err == nil {
			t.Error("commit without ttl accepted")
		}
		if err := s.Commit(ctx, envelope(t, contract.DomainHolders, 1), time.Hour, contract.Status{}); err == nil {
			t.Error("commit of a status record without a collector accepted")
		}
	})

	t.Run("updates are published after each write", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		updates, closeSub, err := s.Updates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = closeSub() }()
		// The subscription is live when Updates returns: the first write
		// after it is announced, in order with the next, and nothing
		// announced before it (the earlier subtests' writes) arrives.
		want := []contract.Domain{contract.DomainSupply, contract.DomainMarket}
		for i, d := range want {
			if err := s.Write(ctx, envelope(t, d, i+1), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range want {
			select {
			case d := <-updates:
				if d != w {
					t.Fatalf("update = %q, want %q", d, w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no update of %s received", w)
			}
		}
	})

	t.Run("concurrent readers and writers", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		var wg sync.WaitGroup
		errc := make(chan error, 64)
		for w := range 4 {
			wg.Go(func() {
				for i := range 50 {
					d := contract.Domains[(w+i)%len(contract.Domains)]
					if err := s.Write(ctx, envelope(t, d, w*1000+i), time.Hour); err != nil {
						errc <- err
						return
					}
				}
			})
		}
		for range 4 {
			wg.Go(func() {
				for range 50 {
					_, errs, err := s.ReadAll(ctx)
					if err != nil {
						errc <- err
						return
					}
					for _, e := range errs {
						errc <- e
						return
					}
				}
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		docs, _, _ := s.ReadAll(ctx)
		if len(docs) != 4 {
			t.Errorf("after concurrent writes %d domains present, want 4", len(docs))
		}
	})
}

// TestRedisRestart kills Redis while a client is in use: commands fail
// while it is down, the same client recovers when it is back, everything
// written after the return is kept, and the subscription resumes.
func TestRedisRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, srv := redisFactory(t)
	s := store.New(b, mint)
	updates, closeSub, err := s.Updates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeSub() }()
	if err := s.Write(ctx, envelope(t, contract.DomainSupply, 1), time.Hour); err != nil {
		t.Fatal(err)
	}
	<-updates

	srv.Stop()
	if err := s.Write(ctx, envelope(t, contract.DomainSupply, 2), time.Hour); err == nil {
		t.Fatal("write succeeded with Redis down")
	}
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping succeeded with Redis down")
	}
	srv.Resume()
	var docs []contract.Domain
	for range 50 { // the pool redials on demand
		if docs, _, err = s.Missing(ctx, "", contract.DomainSupply); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !slices.Equal(docs, []contract.Domain{contract.DomainSupply}) {
		t.Fatalf("after a restart without persistence: Missing = %v, %v; want [supply]", docs, err)
	}

	var werr error
	for range 50 { // the pool redials on demand
		if werr = s.Write(ctx, envelope(t, contract.DomainSupply, 3), time.Hour); werr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if werr != nil {
		t.Fatalf("client did not recover: %v", werr)
	}
	for i := 4; i < 20; i++ {
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, i), time.Hour); err != nil {
			t.Fatalf("write %d after recovery: %v", i, err)
		}
	}
	doc, err := s.Read(ctx, contract.DomainHolders)
	if err != nil || holdersOf(t, doc) != 19 {
		t.Fatalf("after recovery: %v", err)
	}
	doc, err = s.Read(ctx, contract.DomainSupply)
	if err != nil || holdersOf(t, doc) != 3 {
		t.Fatalf("supply after recovery: %v", err)
	}

	// The subscription reconnects by itself; keep writing until an update
	// arrives through it.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-updates:
			return
		case <-tick.C:
			_ = s.Write(ctx, envelope(t, contract.DomainMarket, 1), time.Hour)
		case <-deadline:
			t.Fatal("subscription did not resume after the restart")
		}
	}
}

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		url      string
		addrs    int
		master   string
		db       int
		password string
		wantErr  bool
		wantTLS  bool
	}{
		{url: "redis://127.0.0.1:6379", addrs: 1},
		{url: "redis://:secret@127.0.0.1:6379/2", addrs: 1, db: 2, password: "secret"},
		{url: "rediss://cache.example:6380", addrs: 1, wantTLS: true},
		{url: "redis://a:1?addr=b:2&addr=c:3", addrs: 3},
		{url: "redis-sentinel://:pw@s1:26379,s2:26379/mymaster/1", addrs: 2, master: "mymaster", db: 1, password: "pw"},
		{url: "redis-sentinel://s1:26379", wantErr: true},
		{url: "redis-sentinel://s1:26379/m/x", wantErr: true},
		{url: "http://x", wantErr: true},
		{url: "", wantErr: true},
	}
	for _, tt := range tests {
		o, err := store.ParseRedisURL(tt.url)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%q accepted", tt.url)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.url, err)
			continue
		}
		if len(o.Addrs) != tt.addrs || o.MasterName != tt.master || o.DB != tt.db || o.Password != tt.password || (o.TLSConfig != nil) != tt.wantTLS {
			t.Errorf("%q parsed as %+v", tt.url, o)
		}
	}
}

// TestKeyWithoutTTLRefused: a document key that someone wrote without an
// expiry (by hand, or another program) is refused, not served forever.
func TestKeyWithoutTTLRefused(t *testing.T) {
	ctx := context.Background()
	b, _ := redisFactory(t)
	s := store.New(b, mint)
	raw, err := json.Marshal(envelope(t, contract.DomainHolders, 7))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.(*store.Redis).Client().Set(ctx, contract.DocumentKey(mint, contract.DomainHolders), raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	docs, errs, err := s.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := docs[contract.DomainHolders]; ok {
		t.Fatal("a document without a TTL was returned")
	}
	if e := errs[contract.DomainHolders]; e == nil || !strings.Contains(e.Error(), "no TTL") {
		t.Fatalf("refusal not reported: %v", e)
	}
	// written again the way every writer does, it is read
	if err := s.Write(ctx, envelope(t, contract.DomainHolders, 8), time.Hour); err != nil {
		t.Fatal(err)
	}
	doc, err := s.Read(ctx, contract.DomainHolders)
	if err != nil || holdersOf(t, doc) != 8 {
		t.Fatalf("after a proper write: %v", err)
	}
}
