package store_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// Every read is bounded, and a Reader fetches a value only when it moved:
// run on both backends.
func TestBoundedReadsMemory(t *testing.T) { runBounded(t, memoryFactory) }
func TestBoundedReadsRedis(t *testing.T)  { runBounded(t, redisFactory) }

// counting is a Backend that records the keys each MGet asked for.
type counting struct {
	store.Backend
	mu   sync.Mutex
	gets []string
}

func (c *counting) MGet(ctx context.Context, limit int64, keys ...string) ([]store.Value, error) {
	c.mu.Lock()
	c.gets = append(c.gets, keys...)
	c.mu.Unlock()
	return c.Backend.MGet(ctx, limit, keys...)
}

// took returns the keys read since the last call.
func (c *counting) took() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.gets
	c.gets = nil
	return out
}

// hooked runs before, when set, ahead of every Stat and MGet it passes on,
// with the call's number in the read (from 0).
type hooked struct {
	store.Backend
	calls  int
	before func(call int)
}

func (h *hooked) step() {
	if h.before != nil {
		h.before(h.calls)
	}
	h.calls++
}

func (h *hooked) MGet(ctx context.Context, limit int64, keys ...string) ([]store.Value, error) {
	h.step()
	return h.Backend.MGet(ctx, limit, keys...)
}

func (h *hooked) Stat(ctx context.Context, keys ...string) ([]store.Stat, error) {
	h.step()
	return h.Backend.Stat(ctx, keys...)
}

func runBounded(t *testing.T, newBackend backendFactory) {
	ctx := context.Background()
	key := func(d contract.Domain) string { return contract.DocumentKey(mint, d) }

	t.Run("MGet reads at most the limit", func(t *testing.T) {
		b, _ := newBackend(t)
		val := bytes.Repeat([]byte("x"), 100)
		if err := b.Set(ctx, "k", val, time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int64{1, 99} {
			vals, err := b.MGet(ctx, limit, "k", "absent")
			if err != nil {
				t.Fatal(err)
			}
			v := vals[0]
			if !v.Found || !v.TooLarge || v.Data != nil || v.Size != 100 || v.TTL <= 59*time.Minute {
				t.Errorf("limit %d: %+v, want found, too large, size 100, no data, its TTL", limit, v)
			}
			if vals[1].Found {
				t.Errorf("limit %d: absent key found", limit)
			}
		}
		for _, limit := range []int64{100, 1 << 20} {
			vals, err := b.MGet(ctx, limit, "k")
			if err != nil {
				t.Fatal(err)
			}
			if v := vals[0]; !v.Found || v.TooLarge || !bytes.Equal(v.Data, val) || v.Size != 100 {
				t.Errorf("limit %d: %+v, want the whole value", limit, v)
			}
		}
		if _, err := b.MGet(ctx, 0, "k"); err == nil {
			t.Error("MGet without a limit accepted")
		}
	})

	t.Run("Stat gives size and TTL without the value", func(t *testing.T) {
		b, _ := newBackend(t)
		if err := b.Set(ctx, "k", []byte("12345"), time.Hour); err != nil {
			t.Fatal(err)
		}
		st, err := b.Stat(ctx, "k", "absent")
		if err != nil {
			t.Fatal(err)
		}
		if !st[0].Found || st[0].Size != 5 || st[0].TTL <= 59*time.Minute || st[0].TTL > time.Hour {
			t.Errorf("stat = %+v", st[0])
		}
		if st[1].Found {
			t.Errorf("absent key: %+v", st[1])
		}
	})

	t.Run("ReadAll refuses a value above the default limit", func(t *testing.T) {
		b, _ := newBackend(t)
		s := store.New(b, mint)
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, 7), time.Hour); err != nil {
			t.Fatal(err)
		}
		huge := bytes.Repeat([]byte(" "), store.DefaultMaxValueBytes+1)
		if err := b.Set(ctx, key(contract.DomainMarket), huge, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := b.Set(ctx, contract.StatusKey(mint, contract.CollectorMarket), huge, time.Hour); err != nil {
			t.Fatal(err)
		}
		docs, errs, err := s.ReadAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e := errs[contract.DomainMarket]; !errors.Is(e, store.ErrTooLarge) || !strings.Contains(e.Error(), strconv.Itoa(len(huge))) {
			t.Errorf("market: %v, want ErrTooLarge with the size", e)
		}
		if len(docs) != 1 || holdersOf(t, docs[contract.DomainHolders]) != 7 {
			t.Errorf("good document not served beside the refused one: %v", docs)
		}
		sts, err := s.ReadStatuses(ctx)
		if err != nil || len(sts) != 0 {
			t.Errorf("an oversized status record was read: %v %v", sts, err)
		}
	})

	t.Run("Reader fetches only what moved", func(t *testing.T) {
		b, _ := newBackend(t)
		cb := &counting{Backend: b}
		s := store.New(cb, mint)
		for i, d := range contract.Domains {
			if err := s.Write(ctx, envelope(t, d, 40+i), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.WriteStatus(ctx, contract.Status{Collector: contract.CollectorHolders}); err != nil {
			t.Fatal(err)
		}
		r := s.NewReader(4096)
		read := func(fetch ...contract.Domain) store.Snapshot {
			t.Helper()
			snap, err := r.Read(ctx, fetch...)
			if err != nil {
				t.Fatal(err)
			}
			return snap
		}
		docKeys := func(keys []string) []string {
			return slices.DeleteFunc(keys, func(k string) bool { return strings.Contains(k, ":status:") })
		}

		snap := read()
		if snap.Fetched != 4 || len(snap.Docs) != 4 || len(snap.Statuses) != 1 || len(snap.Errs) != 0 {
			t.Fatalf("first read: %+v", snap)
		}
		cb.took()
		for range 3 {
			snap = read()
			if got := docKeys(cb.took()); snap.Fetched != 0 || len(got) != 0 {
				t.Fatalf("unchanged documents fetched again: %v", got)
			}
			if len(snap.Docs) != 4 || holdersOf(t, snap.Docs[contract.DomainHolders]) != 43 || len(snap.Statuses) != 1 {
				t.Fatalf("unchanged read: %+v", snap)
			}
			if ttl := snap.Docs[contract.DomainSupply].TTL; ttl <= 59*time.Minute || ttl > time.Hour {
				t.Errorf("remaining TTL of an unchanged document: %s", ttl)
			}
		}

		// A rewrite of the same length and TTL restarts the TTL: fetched.
		time.Sleep(20 * time.Millisecond)
		if err := s.Write(ctx, envelope(t, contract.DomainHolders, 44), time.Hour); err != nil {
			t.Fatal(err)
		}
		snap = read()
		if got := docKeys(cb.took()); !slices.Equal(got, []string{key(contract.DomainHolders)}) ||
			holdersOf(t, snap.Docs[contract.DomainHolders]) != 44 {
			t.Fatalf("same-length rewrite: fetched %v, holders %d", got, holdersOf(t, snap.Docs[contract.DomainHolders]))
		}

		// A domain named by the caller is fetched although unchanged.
		read(contract.DomainSupply)
		if got := docKeys(cb.took()); !slices.Equal(got, []string{key(contract.DomainSupply)}) {
			t.Fatalf("named domain: fetched %v", got)
		}

		// A value above the limit is refused unread, by fingerprint or by name.
		big := bytes.Repeat([]byte("{"), 5000)
		if err := b.Set(ctx, key(contract.DomainMarket), big, time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, fetch := range [][]contract.Domain{nil, contract.Domains} {
			snap = read(fetch...)
			if got := docKeys(cb.took()); slices.Contains(got, key(contract.DomainMarket)) {
				t.Fatalf("the oversized value was fetched: %v", got)
			}
			if e := snap.Errs[contract.DomainMarket]; !errors.Is(e, store.ErrTooLarge) || !strings.Contains(e.Error(), "5000 bytes") {
				t.Fatalf("oversized value: %v", e)
			}
			if _, ok := snap.Docs[contract.DomainMarket]; ok || len(snap.Docs) != 3 {
				t.Fatalf("docs beside an oversized value: %v", snap.Docs)
			}
		}

		// A good write after it is read again; an expired key is gone.
		if err := s.Write(ctx, envelope(t, contract.DomainMarket, 9), 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if snap = read(); len(snap.Errs) != 0 || len(snap.Docs) != 4 {
			t.Fatalf("after a good write: %+v", snap)
		}
		time.Sleep(450 * time.Millisecond)
		if snap = read(); len(snap.Docs) != 3 {
			t.Fatalf("expired document still read: %v", snap.Docs)
		}
	})

	// A good poll commits its document and its run at once. Whichever
	// round trip of a Read the commit lands before, the Read holds the
	// document and the run of one commit: never the new run beside the old
	// document (a status newer than the data would tell a client of a
	// failure, the next run's, while older data than the last good poll's
	// is served), nor the new document beside the old run (a /api/status
	// whose collector's last success is older than the data it serves).
	t.Run("Reader holds the document and the run of one commit", func(t *testing.T) {
		for at := 0; at < 8; at++ {
			b, _ := newBackend(t)
			hb := &hooked{Backend: b}
			s := store.New(hb, mint)
			run := func(slot int) contract.Status {
				done := time.Unix(int64(1_800_000_000+slot), 0).UTC()
				return contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
					contract.DomainHolders: {StartedAt: done.Add(-time.Second), FinishedAt: done, OK: true}}}
			}
			if err := s.Commit(ctx, envelope(t, contract.DomainHolders, 1), time.Hour, run(1)); err != nil {
				t.Fatal(err)
			}
			r := s.NewReader(4096)
			if _, err := r.Read(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // the rewrite's expiry moves past the fingerprint's slack
			hb.calls = 0
			hb.before = func(call int) {
				if call == at {
					if err := s.Commit(ctx, envelope(t, contract.DomainHolders, 2), time.Hour, run(2)); err != nil {
						t.Error(err)
					}
				}
			}
			snap, err := r.Read(ctx)
			hb.before = nil
			if err != nil {
				t.Fatal(err)
			}
			if at >= hb.calls {
				break // the Read made fewer round trips: every place was tried
			}
			newRun := snap.Statuses[contract.CollectorHolders].Runs[contract.DomainHolders].FinishedAt.Equal(run(2).Runs[contract.DomainHolders].FinishedAt)
			switch got := holdersOf(t, snap.Docs[contract.DomainHolders]); {
			case newRun && got != 2:
				t.Errorf("commit before round trip %d of %d: the Read holds the new run beside the document of %d", at, hb.calls, got)
			case !newRun && got == 2:
				t.Errorf("commit before round trip %d of %d: the Read holds the new document beside the old run", at, hb.calls)
			}
		}
	})
}

// TestOversizedValueNotTransferred: on Redis, a value above the limit does
// not cross the wire, whether a Reader skips it or ReadAll meets it.
func TestOversizedValueNotTransferred(t *testing.T) {
	ctx := context.Background()
	b, _ := redisFactory(t)
	rc := b.(*store.Redis).Client()
	s := store.New(b, mint)
	if err := rc.Set(ctx, contract.DocumentKey(mint, contract.DomainMarket), bytes.Repeat([]byte("x"), 32<<20), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	sent := func() int64 {
		t.Helper()
		info, err := rc.Info(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_net_output_bytes:"); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("no total_net_output_bytes in INFO stats")
		return 0
	}
	r := s.NewReader(64 << 10)
	start := sent()
	for range 5 {
		if _, err := r.Read(ctx, contract.Domains...); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent() - start; n > 64<<10 {
		t.Errorf("5 reads sent %d bytes", n)
	}
	start = sent()
	if _, _, err := s.ReadAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sent() - start; n > store.DefaultMaxValueBytes+64<<10 {
		t.Errorf("ReadAll sent %d bytes", n)
	}
}
