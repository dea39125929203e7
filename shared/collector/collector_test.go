package collector_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/store"
)

const mint = "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR"

func newRunner(t *testing.T, poll func(context.Context) (collector.Result, error)) (*collector.Runner, *store.Store, *prometheus.Registry) {
	t.Helper()
	mem := store.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	s := store.New(mem, mint)
	reg := prometheus.NewRegistry()
	r := &collector.Runner{
		Name: contract.CollectorHolders, Store: s, Metrics: collector.NewMetrics(reg),
		Log:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Backoff: collector.Backoff{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond},
		Jobs: []collector.Job{{Domain: contract.DomainHolders, Upstream: contract.UpstreamSolanaRPC,
			Timing: contract.DefaultTimings[contract.DomainHolders], Poll: poll}},
	}
	return r, s, reg
}

func TestFailedPollKeepsGoodDocument(t *testing.T) {
	ctx := context.Background()
	var fail bool
	calls := 0
	r, s, reg := newRunner(t, func(context.Context) (collector.Result, error) {
		calls++
		if fail {
			return collector.Result{}, collector.Errorf(contract.ErrKindUnavailable, true, "down")
		}
		return collector.Result{Doc: contract.Holders{Holders: 5}}, nil
	})
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	fail = true
	calls = 0
	for range 2 {
		if err := r.RunOnce(ctx, contract.DomainHolders); err == nil {
			t.Fatal("failed poll reported success")
		}
	}
	if calls != 6 {
		t.Errorf("retryable failure polled %d times over two runs, want 3 attempts each", calls)
	}
	doc, err := s.Read(ctx, contract.DomainHolders)
	if err != nil {
		t.Fatal(err)
	}
	var h contract.Holders
	if err := doc.Decode(&h); err != nil || h.Holders != 5 {
		t.Fatalf("good document lost: %+v %v", h, err)
	}
	st, _ := s.ReadStatuses(ctx)
	run := st[contract.CollectorHolders].Runs[contract.DomainHolders]
	if run.OK || run.ConsecutiveFailures != 2 || run.ErrorKind != contract.ErrKindUnavailable || run.LastSuccessAt == nil {
		t.Errorf("status = %+v", run)
	}
	if n := testutil.CollectAndCount(reg, "tokendata_collector_runs_total"); n != 2 {
		t.Errorf("runs series = %d, want ok and upstream_unavailable", n)
	}
}

func TestNonRetryableIsTriedOnce(t *testing.T) {
	calls := 0
	r, _, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		calls++
		return collector.Result{}, collector.Errorf(contract.ErrKindUnsupported, false, "no index")
	})
	err := r.RunOnce(context.Background(), contract.DomainHolders)
	var ce *collector.Error
	if !errors.As(err, &ce) || ce.Kind != contract.ErrKindUnsupported || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestClassifyHidesUnknownMessages(t *testing.T) {
	ce := collector.Classify(errors.New(`Post "https://rpc.example/?api-key=SECRET": boom`))
	if ce.Kind != contract.ErrKindInternal || ce.Message == "" || containsSecret(ce.Message) {
		t.Errorf("classified = %+v", ce)
	}
}

func containsSecret(s string) bool { return strings.Contains(s, "SECRET") }

func TestClassifyHTTP(t *testing.T) {
	tests := []struct {
		code  int
		kind  string
		retry bool
	}{
		{200, "", false}, {429, contract.ErrKindRateLimited, true}, {403, contract.ErrKindForbidden, false},
		{503, contract.ErrKindUnavailable, true}, {404, contract.ErrKindInvalid, false},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: tt.code, Header: http.Header{"Retry-After": {"7"}}}
		e := collector.ClassifyHTTP("dexscreener", resp)
		if tt.kind == "" {
			if e != nil {
				t.Errorf("%d: %v", tt.code, e)
			}
			continue
		}
		if e == nil || e.Kind != tt.kind || e.Retry != tt.retry {
			t.Errorf("%d: %+v", tt.code, e)
		}
		if tt.code == 429 && e.RetryAfter != 7*time.Second {
			t.Errorf("Retry-After not read: %s", e.RetryAfter)
		}
	}
}

// TestRunnerRedactsEveryText: whatever a poll reports, the configured
// secrets never reach the status record, the log or the returned error,
// and a long upstream text is cut only after it was redacted.
func TestRunnerRedactsEveryText(t *testing.T) {
	const key = "k3y-0f-the-node-42"
	rpc := config.Secret("https://rpc.example/v2/" + key)
	ctx := context.Background()
	var logs logging.Buffer
	fail := true
	r, s, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		if fail {
			return collector.Result{}, &collector.Error{Kind: contract.ErrKindForbidden,
				Message: strings.Repeat("x", 505) + " api key " + key + " is not allowed",
				Remedy:  "the key " + url.QueryEscape(key) + " has no plan"}
		}
		return collector.Result{Doc: contract.Holders{Holders: 5}, Note: "used " + key}, nil
	})
	r.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	r.Redactor = config.NewRedactor(rpc)
	err := r.RunOnce(ctx, contract.DomainHolders)
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("RunOnce = %v", err)
	}
	fail = false
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	if note := r.Status().Runs[contract.DomainHolders].Note; note != "used "+config.Mask {
		t.Errorf("note = %q", note)
	}
	if note := r.Status().Runs[contract.DomainHolders].Note; note != "used "+config.Mask {
		t.Errorf("note = %q", note)
	}
	fail = true
	_ = r.RunOnce(ctx, contract.DomainHolders)
	st, err := s.ReadStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(st)
	for what, text := range map[string]string{"status record": string(rec), "log": logs.String()} {
		if strings.Contains(text, "k3y-0f") {
			t.Errorf("%s quotes the key: %s", what, text)
		}
	}
	run := st[contract.CollectorHolders].Runs[contract.DomainHolders]
	if len(run.Error) > 520 || !strings.HasSuffix(run.Error, "…") || !strings.Contains(run.Remedy, config.Mask) {
		t.Errorf("run = %+v", run)
	}
}

// TestRetryAfterLongerThanThePollAllows: an upstream asking to wait longer
// than half the refresh (the longest a poll retries) is not retried
// sooner: the poll ends after one try. A shorter wait is waited out in
// full before the retry.
func TestRetryAfterLongerThanThePollAllows(t *testing.T) {
	var calls []time.Time
	var wait time.Duration
	r, _, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		calls = append(calls, time.Now())
		e := collector.Errorf(contract.ErrKindRateLimited, true, "slow down")
		e.RetryAfter = wait
		return collector.Result{}, e
	})
	r.Jobs[0].Timing = contract.Timing{Refresh: 2 * time.Second, StaleAfter: 2 * time.Second, TTL: time.Minute}

	wait = 5 * time.Second // over the 1 s a poll may wait
	if err := r.RunOnce(context.Background(), contract.DomainHolders); err == nil || len(calls) != 1 {
		t.Fatalf("Retry-After %s: %d calls (%v), want 1", wait, len(calls), err)
	}
	calls, wait = nil, 300*time.Millisecond
	if err := r.RunOnce(context.Background(), contract.DomainHolders); err == nil || len(calls) != 3 {
		t.Fatalf("Retry-After %s: %d calls (%v), want 3", wait, len(calls), err)
	}
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Sub(calls[i-1]); gap < wait {
			t.Errorf("retry %d came %s after the 429, before its Retry-After %s", i, gap, wait)
		}
	}
}

func TestHolds(t *testing.T) {
	var h collector.Holds
	if e := h.Check("dexscreener"); e != nil {
		t.Fatalf("fresh holds: %v", e)
	}
	h.Observe("dexscreener", collector.Errorf(contract.ErrKindUnavailable, true, "no Retry-After"))
	h.Observe("dexscreener", errors.New("not classified"))
	if e := h.Check("dexscreener"); e != nil {
		t.Fatalf("a failure without Retry-After holds: %v", e)
	}
	const wait = 300 * time.Millisecond
	e := collector.Errorf(contract.ErrKindRateLimited, true, "429")
	e.RetryAfter = wait
	h.Observe("dexscreener", e)
	held := h.Check("dexscreener")
	if held == nil || held.Kind != contract.ErrKindRateLimited || !held.Retry || held.RetryAfter <= 0 || held.RetryAfter > wait {
		t.Fatalf("held: %+v", held)
	}
	if other := h.Check("geckoterminal"); other != nil {
		t.Errorf("another upstream is held: %v", other)
	}
	time.Sleep(wait)
	if e := h.Check("dexscreener"); e != nil {
		t.Errorf("still held after the wait: %v", e)
	}
}

// TestKeyRunsOutTTLAfterTheDocumentsDate: a document's key expires its
// domain's TTL after the document's updated_at, however long the poll
// and the write took, so that no reader serves it longer.
func TestKeyRunsOutTTLAfterTheDocumentsDate(t *testing.T) {
	ctx := context.Background()
	ttl := contract.DefaultTimings[contract.DomainHolders].TTL
	var dated time.Time
	r, s, _ := newRunner(t, func(context.Context) (collector.Result, error) {
		return collector.Result{Doc: contract.Holders{Holders: 5}, UpdatedAt: dated}, nil
	})
	// A poll that took an hour. updated_at is a wall-clock time (it carries
	// no monotonic reading), so the collector counts the TTL on the wall
	// clock; the test does too, and allows a second either way for the
	// host's clock being stepped or slewed meanwhile (CI saw 7 ms). The
	// wrong answers it tells apart are an hour away: the TTL counted from
	// the write (168 h) or not counted at all.
	dated = time.Now().Add(-time.Hour).Round(0)
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	want := time.Until(dated.Add(ttl))
	doc, err := s.Read(ctx, contract.DomainHolders)
	if err != nil {
		t.Fatal(err)
	}
	if doc.TTL > want+time.Second || doc.TTL < want-time.Second {
		t.Errorf("key TTL %s for a document dated an hour ago, want %s within a second (the domain's %s from its date)", doc.TTL, want, ttl)
	}

	dated = time.Now().Add(-ttl - time.Minute) // past its TTL when written
	if err := r.RunOnce(ctx, contract.DomainHolders); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if doc, err := s.Read(ctx, contract.DomainHolders); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a document past its TTL when written is readable: TTL %s, err %v", doc.TTL, err)
	}
}
