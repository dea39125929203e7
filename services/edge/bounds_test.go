package edge

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// TestOversizedDocumentNotRead: a 100 MB value in a domain key of Redis is
// never read: the edge's memory does not grow across refreshes, forced or
// polled, the previous good document keeps being served, and /api/status
// says why the stored one was refused.
func TestOversizedDocumentNotRead(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB to Redis")
	}
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	r := store.NewRedis(opts)
	st := store.New(r, config.DemoMint)
	t.Cleanup(func() { _ = st.Close() })
	h := newHarness(t, st, func(_ *config.Common, c *Config, _ *Deps) { c.StoreTimeout = 10 * time.Second })
	h.writeAll()
	h.refresh()
	good := h.do(http.MethodGet, view.PathPrice).Body.String()

	huge := bytes.Repeat([]byte("x"), 100<<20)
	key := contract.DocumentKey(config.DemoMint, contract.DomainMarket)
	if err := r.Client().Set(context.Background(), key, huge, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 3 {
		h.refresh()                                                // every document fetched
		h.srv.refresh(context.Background())                        // a poll
		h.srv.refresh(context.Background(), contract.DomainMarket) // a notification of it
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Errorf("9 refreshes allocated %d MB", d>>20)
	}
	if d := int64(after.HeapAlloc) - int64(before.HeapAlloc); d > 4<<20 {
		t.Errorf("the heap grew by %d MB", d>>20)
	}
	if got := h.do(http.MethodGet, view.PathPrice).Body.String(); got != good {
		t.Fatalf("the previous good document is not served: %s", got)
	}
	rej := h.srv.statusReportNow().Checks.Domains["market"].Rejected
	if rej == nil || !strings.Contains(*rej, "104857600 bytes") || !strings.Contains(*rej, "not read") {
		t.Fatalf("status does not say why the market document was refused: %v", rej)
	}
	if st := h.srv.statusReportNow(); st.Status != view.StatusDegraded {
		t.Errorf("status %q with a refused document", st.Status)
	}
}

// countingBackend records the document keys each MGet asked for.
type countingBackend struct {
	store.Backend
	mu   sync.Mutex
	docs []string
}

func (c *countingBackend) MGet(ctx context.Context, limit int64, keys ...string) ([]store.Value, error) {
	c.mu.Lock()
	for _, k := range keys {
		if !strings.Contains(k, ":status:") {
			c.docs = append(c.docs, k)
		}
	}
	c.mu.Unlock()
	return c.Backend.MGet(ctx, limit, keys...)
}

func (c *countingBackend) took() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.docs
	c.docs = nil
	return out
}

// TestPollFetchesOnlyChangedDocuments: a poll does not fetch a document
// whose key has not changed; it fetches a rewritten one, and a
// notification fetches the domain it names.
func TestPollFetchesOnlyChangedDocuments(t *testing.T) {
	mem := store.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	cb := &countingBackend{Backend: mem}
	h := newHarness(t, store.New(cb, config.DemoMint))
	poll := func(fetch ...contract.Domain) []string {
		h.srv.refresh(context.Background(), fetch...)
		return cb.took()
	}
	h.writeAll()
	h.refresh()
	if got := cb.took(); len(got) != len(contract.Domains) {
		t.Fatalf("the first refresh fetched %v", got)
	}
	for range 5 {
		if got := poll(); len(got) != 0 {
			t.Fatalf("a poll fetched unchanged documents %v", got)
		}
	}
	time.Sleep(10 * time.Millisecond) // the rewrite's TTL starts later
	m := edgetest.Market()
	m.PriceUSD = decimalPtr("0.0000123")
	h.write(contract.DomainMarket, m, 0)
	if got := poll(); !slices.Equal(got, []string{contract.DocumentKey(config.DemoMint, contract.DomainMarket)}) {
		t.Fatalf("a poll after a rewrite fetched %v", got)
	}
	if body := h.do(http.MethodGet, view.PathPrice).Body.String(); !strings.Contains(body, "0.0000123") {
		t.Fatalf("the rewritten document is not served: %s", body)
	}
	if got := poll(contract.DomainHolders); !slices.Equal(got, []string{contract.DocumentKey(config.DemoMint, contract.DomainHolders)}) {
		t.Fatalf("a notification of holders fetched %v", got)
	}
}
