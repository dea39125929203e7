package supply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/testkit/golden"
)

// rewriter serves the simulator's handler and rewrites the answers of one
// RPC method: the simulator's real wire shapes, with one implausible value
// planted, to prove the collector refuses what it cannot trust.
type rewriter struct {
	sim *solanasim.Server
	mu  sync.Mutex
	fn  func(method string, body []byte) []byte
}

func (rw *rewriter) set(fn func(method string, body []byte) []byte) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.fn = fn
}

func (rw *rewriter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &req)
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.Header.Del("Accept-Encoding")
	rec := httptest.NewRecorder()
	rw.sim.Handler().ServeHTTP(rec, r2)
	out := rec.Body.Bytes()
	rw.mu.Lock()
	if rw.fn != nil {
		out = rw.fn(req.Method, out)
	}
	rw.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// startRewriter serves tok's simulator behind a rewriter.
func startRewriter(t *testing.T, tok solanasim.Token) (*rewriter, string) {
	t.Helper()
	sim := solanasim.New()
	if err := sim.AddToken(tok); err != nil {
		t.Fatal(err)
	}
	rw := &rewriter{sim: sim}
	srv := httptest.NewServer(rw)
	t.Cleanup(srv.Close)
	return rw, srv.URL + "/?api-key=" + secretKey
}

func replaceIn(method string, re *regexp.Regexp, repl string) func(string, []byte) []byte {
	return func(m string, b []byte) []byte {
		if m != method {
			return b
		}
		return re.ReplaceAll(b, []byte(repl))
	}
}

func TestImplausibleAnswersAreRefused(t *testing.T) {
	amountRe := regexp.MustCompile(`"amount":"[0-9]+"`)
	cases := []struct {
		name   string
		domain contract.Domain
		fn     func(string, []byte) []byte
		want   string // in the status message
	}{
		{"negative amount", contract.DomainSupply, replaceIn(methodGetTokenSupply, amountRe, `"amount":"-5"`), "not a u64"},
		{"amount above u64", contract.DomainSupply, replaceIn(methodGetTokenSupply, amountRe, `"amount":"18446744073709551616"`), "not a u64"},
		{"amount in exponent form", contract.DomainSupply, replaceIn(methodGetTokenSupply, amountRe, `"amount":"1e18"`), "not a u64"},
		{"empty amount", contract.DomainSupply, replaceIn(methodGetTokenSupply, amountRe, `"amount":""`), "not a u64"},
		{"decimals disagree", contract.DomainSupply, replaceIn(methodGetTokenSupply, regexp.MustCompile(`"decimals":9`), `"decimals":8`), "decimals"},
		{"amount disagrees with the mint", contract.DomainSupply, replaceIn(methodGetTokenSupply, amountRe, `"amount":"5"`), "mint account"},
		{"no supply value", contract.DomainSupply, replaceIn(methodGetTokenSupply, regexp.MustCompile(`"value":\{.*\}\}`), `"value":null}`), "without a value"},
		{"no context slot", contract.DomainSupply, replaceIn(methodGetTokenSupply, regexp.MustCompile(`"slot":[0-9]+`), `"slot":0`), "slot"},
		{"mint owned by another program", contract.DomainSupply, replaceIn(methodGetAccountInfo, regexp.MustCompile(`"owner":"[^"]+"`), `"owner":"11111111111111111111111111111111"`), "not by the Token"},
		{"mint account missing", contract.DomainSupply, replaceIn(methodGetAccountInfo, regexp.MustCompile(`"value":\{.*\}\}`), `"value":null}`), "does not exist"},
		{"mint data garbage", contract.DomainSupply, replaceIn(methodGetAccountInfo, regexp.MustCompile(`"data":\["[^"]*"`), `"data":["AAEC"`), "mint account"},
		{"metadata mint data garbage", contract.DomainMetadata, replaceIn(methodGetAccountInfo, regexp.MustCompile(`"data":\["[^"]*"`), `"data":["AAEC"`), "mint account"},
		{"metadata owned by another program", contract.DomainMetadata, func(m string, b []byte) []byte {
			if m != methodGetAccountInfo || !bytes.Contains(b, []byte(solanasim.MetadataProgramID)) {
				return b
			}
			return bytes.ReplaceAll(b, []byte(solanasim.MetadataProgramID), []byte("11111111111111111111111111111111"))
		}, "Token Metadata program"},
		{"metadata account garbage", contract.DomainMetadata, func(m string, b []byte) []byte {
			if m != methodGetAccountInfo || !bytes.Contains(b, []byte(solanasim.MetadataProgramID)) {
				return b
			}
			return regexp.MustCompile(`"data":\["[^"]*"`).ReplaceAll(b, []byte(`"data":["BAAA"`))
		}, "metadata account"},
	}
	tok := classic9()
	rw, url := startRewriter(t, tok)
	f := newFixtureOn(t, rw.sim, url, tok.Mint, fixtureOpts{})
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.raw(t, tc.domain)
			rw.set(tc.fn)
			err := f.c.RunOnce(context.Background(), tc.domain)
			rw.set(nil)
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != contract.ErrKindInvalid || !strings.Contains(ce.Message, tc.want) {
				t.Fatalf("RunOnce = %v, want invalid_response mentioning %q", err, tc.want)
			}
			if after := f.raw(t, tc.domain); !bytes.Equal(after, before) {
				t.Errorf("an invalid poll changed the document")
			}
			run := f.c.Runner().Status().Runs[tc.domain]
			if run.OK || run.ErrorKind != contract.ErrKindInvalid {
				t.Errorf("status %+v", run)
			}
		})
	}
}

// TestRetryWithinPoll: a failure of the first try is retried inside the
// same poll, which then writes.
func TestRetryWithinPoll(t *testing.T) {
	for _, k := range []fault.Kind{fault.HTTP503, fault.Reset, fault.RPCNodeUnhealthy, fault.HTTP429, fault.Malformed, fault.Truncate} {
		t.Run(string(k), func(t *testing.T) {
			opts := fixtureOpts{}
			if k == fault.HTTP429 {
				// The 429 asks for 1 s: a poll retries it only when that
				// is within half a refresh, and never sooner.
				opts.refresh = 3 * time.Second
			}
			f := newFixture(t, classic9(), opts)
			f.sim.Faults().Inject(methodGetTokenSupply, fault.Fault{Kind: k, Times: 1})
			f.mustRun(t, contract.DomainSupply)
			if _, doc := f.supplyDoc(t); doc.TotalRaw != "999999999123456789" {
				t.Errorf("total %s", doc.TotalRaw)
			}
			if n := f.metric(t, "tokendata_upstream_requests_total", map[string]string{"method": methodGetTokenSupply, "outcome": "ok"}); n != 1 {
				t.Errorf("ok calls %v, want 1", n)
			}
			if n := f.metric(t, "tokendata_upstream_requests_total", map[string]string{"method": methodGetTokenSupply}); n != 2 {
				t.Errorf("getTokenSupply called %v times, want 2 (a failure, then the retry)", n)
			}
			if n := f.metric(t, "tokendata_collector_runs_total", map[string]string{"domain": "supply", "result": "ok"}); n != 1 {
				t.Errorf("runs ok %v, want 1", n)
			}
		})
	}
}

// TestNoRetryOnRefusal: a 403 is for an operator to fix; retrying it
// within the poll is pointless.
func TestNoRetryOnRefusal(t *testing.T) {
	f := newFixture(t, classic9(), fixtureOpts{})
	f.sim.Faults().Inject(methodGetTokenSupply, fault.Fault{Kind: fault.HTTP403})
	err := f.c.RunOnce(context.Background(), contract.DomainSupply)
	var ce *collector.Error
	if !errors.As(err, &ce) || ce.Kind != contract.ErrKindForbidden || ce.Remedy == "" {
		t.Fatalf("err %v", err)
	}
	if n := f.metric(t, "tokendata_upstream_requests_total", map[string]string{"method": methodGetTokenSupply, "outcome": contract.ErrKindForbidden}); n != 1 {
		t.Errorf("403 tried %v times, want 1", n)
	}
	if f.raw(t, contract.DomainSupply) != nil {
		t.Error("a document was written")
	}
	st := f.c.Runner().Status().Runs[contract.DomainSupply]
	st.StartedAt, st.FinishedAt = time.Time{}, time.Time{}
	b, _ := json.MarshalIndent(st, "", "  ")
	golden.Check(t, "status_forbidden", append(b, '\n'), *update)
}

// TestSmallLatency: a slow node within the timeout is not a failure.
func TestSmallLatency(t *testing.T) {
	f := newFixture(t, t22six(), fixtureOpts{})
	f.sim.Faults().Inject("*", fault.Fault{Kind: fault.Latency, Delay: 50 * time.Millisecond})
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)
	if n := f.metric(t, "tokendata_upstream_request_duration_seconds", map[string]string{"method": methodGetAccountInfo, "outcome": "ok"}); n != 2 {
		t.Errorf("getAccountInfo observed %v times, want 2", n)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, classic9(), fixtureOpts{})
	f.mustRun(t, contract.DomainSupply)
	f.mustRun(t, contract.DomainMetadata)
	f.sim.Faults().Inject(methodGetTokenSupply, fault.Fault{Kind: fault.RPCMethodNotFound})
	_ = f.c.RunOnce(context.Background(), contract.DomainSupply)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tokendata_collector_runs_total", map[string]string{"collector": "supply", "domain": "supply", "result": "ok"}, 1},
		{"tokendata_collector_runs_total", map[string]string{"collector": "supply", "domain": "supply", "result": contract.ErrKindRPC}, 1},
		{"tokendata_collector_runs_total", map[string]string{"collector": "supply", "domain": "metadata", "result": "ok"}, 1},
		{"tokendata_collector_run_duration_seconds", map[string]string{"collector": "supply", "domain": "supply"}, 2},
		{"tokendata_collector_consecutive_failures", map[string]string{"domain": "supply"}, 1},
		{"tokendata_upstream_requests_total", map[string]string{"upstream": "solana-rpc", "method": methodGetTokenSupply, "outcome": "ok"}, 1},
		{"tokendata_upstream_requests_total", map[string]string{"method": methodGetTokenSupply, "outcome": contract.ErrKindRPC}, 1},
		// supply: the mint; metadata: the mint, then the Metaplex account.
		{"tokendata_upstream_requests_total", map[string]string{"method": methodGetAccountInfo, "outcome": "ok"}, 3},
	} {
		if got := f.metric(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if ts := f.metric(t, "tokendata_collector_last_success_timestamp_seconds", map[string]string{"domain": "metadata"}); ts < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last success %v", ts)
	}
}

// TestDecimalsOutOfRange: a mint that reports more decimals than the
// service publishes is the ledger's fact, not a configuration error, and
// the message says what the mint reports and what is supported.
func TestDecimalsOutOfRange(t *testing.T) {
	tok := zeroDecimals()
	tok.Mint, tok.Decimals = key("decimals-255"), 255
	f := newFixture(t, tok, fixtureOpts{})
	err := f.c.RunOnce(context.Background(), contract.DomainSupply)
	var ce *collector.Error
	if !errors.As(err, &ce) || ce.Kind != contract.ErrKindInvalid ||
		!strings.Contains(ce.Message, "255 decimals") || !strings.Contains(ce.Message, "0 to 18") {
		t.Fatalf("RunOnce = %v, want invalid_response saying 255 decimals and the range 0 to 18", err)
	}
	if f.raw(t, contract.DomainSupply) != nil {
		t.Error("a document was written")
	}
	if run := f.c.Runner().Status().Runs[contract.DomainSupply]; run.ErrorKind != contract.ErrKindInvalid || run.Remedy == "" {
		t.Errorf("status %+v", run)
	}
}
