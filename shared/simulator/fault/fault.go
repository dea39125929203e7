// Package fault injects upstream failures into the simulator's HTTP routes.
//
// A Set holds at most one fault per route name. Generic HTTP faults (latency,
// status codes, connection reset, truncated body, malformed JSON) are applied
// by Middleware; protocol faults that only a route knows how to express (a
// JSON-RPC error code, an empty pair list) are handed to the route through the
// request context (see FromContext).
package fault

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Kind names one way an upstream can fail.
type Kind string

// Generic kinds, applied by Middleware.
const (
	Latency   Kind = "latency"   // sleep Delay, then answer normally
	HTTP403   Kind = "http_403"  // gateway forbids the request
	HTTP429   Kind = "http_429"  // gateway rate limit, with Retry-After
	HTTP500   Kind = "http_500"  // internal server error
	HTTP503   Kind = "http_503"  // service unavailable
	Reset     Kind = "reset"     // TCP connection reset before any byte
	Truncate  Kind = "truncate"  // status and the first AfterBytes of the body, then the connection drops
	Malformed Kind = "malformed" // 200 with a body that is not valid JSON
)

// Protocol kinds: Middleware leaves them to the route (FromContext).
const (
	RPCNodeUnhealthy  Kind = "rpc_node_unhealthy"   // JSON-RPC -32005
	RPCExcludedIndex  Kind = "rpc_excluded_index"   // JSON-RPC -32010 (getProgramAccounts)
	RPCMethodNotFound Kind = "rpc_method_not_found" // JSON-RPC -32601
	RPCInvalidParams  Kind = "rpc_invalid_params"   // JSON-RPC -32602
	RPCKeyEcho        Kind = "rpc_key_echo"         // JSON-RPC -32052 quoting the caller's API key bare, URL-encoded and in URLs
	PairsEmpty        Kind = "pairs_empty"          // DexScreener answers []
	PairsNull         Kind = "pairs_null"           // DexScreener answers null
	GeckoNotFound     Kind = "gecko_not_found"      // GeckoTerminal 404
)

// Endless kinds: an upstream that does not stop talking. Middleware
// leaves them to the route.
const (
	// Lost drops a PubSub notification without a word, the socket kept
	// open (route programNotification or accountNotification): a node
	// that lost one under load.
	Lost          Kind = "lost"
	EndlessStream Kind = "endless_stream" // getProgramAccounts streams new accounts until the client hangs up; getTokenAccounts pages without end
	HugeError     Kind = "huge_error"     // a JSON-RPC error whose message is 8 MiB (multi-byte text included)
)

// Data kinds: the route answers 200 with its normal data plus extra pairs
// whose values are hostile, or odd but real (the market simulator, dexsim,
// documents each pair). Middleware leaves them to the route.
const (
	HostileHTML    Kind = "hostile_html"    // markup in addresses, names, dex ids, labels and links
	HostileHuge    Kind = "hostile_huge"    // MiB-size names, over-long symbols, dex ids, labels and links
	HostileControl Kind = "hostile_control" // control characters, NUL, U+202E and invalid UTF-8 in text
	HostileNumbers Kind = "hostile_numbers" // a 9e39 USD price, 9e20 USD liquidity, counts of 2^63-1
	RealWorldOdd   Kind = "real_world_odd"  // honest values that look odd: 1e-15 and 68-digit prices, liquidity 0 or absent, Https:// links, unknown fields
)

// Fault is one injected failure.
type Fault struct {
	Kind Kind
	// Delay is the added latency for Latency (and is also applied before any
	// other kind when set).
	Delay time.Duration
	// AfterBytes is how much of the body Truncate lets through (default 64).
	AfterBytes int
	// Times is how many requests the fault applies to; 0 means until Clear.
	Times int
	// RetryAfter is the Retry-After of HTTP429, in whole seconds (1 s when
	// zero or shorter).
	RetryAfter time.Duration
	// Skew is PriceSkew's percentage, a decimal ("5", "-40").
	Skew string
}

// Set is a concurrency-safe table of faults by route name.
type Set struct {
	mu sync.Mutex
	m  map[string]*Fault
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{m: map[string]*Fault{}} }

// Inject sets the fault of route, replacing any previous one.
func (s *Set) Inject(route string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[route] = &f
}

// Clear removes the fault of route.
func (s *Set) Clear(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, route)
}

// ClearAll removes every fault.
func (s *Set) ClearAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.m)
}

// Take returns the fault of route for one request, counting it down.
func (s *Set) Take(route string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.m[route]
	if !ok {
		return Fault{}, false
	}
	out := *f
	if f.Times > 0 {
		f.Times--
		if f.Times == 0 {
			delete(s.m, route)
		}
	}
	return out, true
}

type ctxKey struct{}

// FromContext returns the protocol fault Middleware passed to the route.
func FromContext(ctx context.Context) (Fault, bool) {
	f, ok := ctx.Value(ctxKey{}).(Fault)
	return f, ok
}

// Middleware applies route's fault, if any, to each request.
func (s *Set) Middleware(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := s.Take(route)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		switch f.Kind {
		case Latency:
			next.ServeHTTP(w, r)
		case HTTP403:
			http.Error(w, `{"jsonrpc":"2.0","error":{"code":403,"message":"Forbidden"},"id":null}`, http.StatusForbidden)
		case HTTP429:
			w.Header().Set("Retry-After", strconv.Itoa(max(int(f.RetryAfter/time.Second), 1)))
			http.Error(w, `{"jsonrpc":"2.0","error":{"code":429,"message":"Too many requests for a specific RPC call"},"id":null}`, http.StatusTooManyRequests)
		case HTTP500:
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		case HTTP503:
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		case Reset:
			reset(w)
		case Malformed:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","result":{"value":[{"pubkey":`))
		case Truncate:
			n := f.AfterBytes
			if n <= 0 {
				n = 64
			}
			tw := &truncWriter{ResponseWriter: w, left: n}
			next.ServeHTTP(tw, r)
			// The handler wrote less than the limit: still drop the
			// connection so the client never sees a complete body.
			tw.abort()
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, f)))
		}
	})
}

func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
	_ = conn.Close()
}

// truncWriter passes the first left bytes of the body, then drops the
// connection.
type truncWriter struct {
	http.ResponseWriter
	left int
}

func (t *truncWriter) Write(p []byte) (int, error) {
	if len(p) <= t.left {
		t.left -= len(p)
		return t.ResponseWriter.Write(p)
	}
	_, _ = t.ResponseWriter.Write(p[:t.left])
	t.left = 0
	t.abort()
	return 0, nil // unreachable
}

func (t *truncWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *truncWriter) abort() {
	t.Flush()
	// net/http closes the connection without a final chunk and without
	// logging when a handler panics with ErrAbortHandler.
	panic(http.ErrAbortHandler)
}
