// Package dexsim simulates the two market aggregators the market collector
// reads, DexScreener and GeckoTerminal, on a loopback port with their real
// wire shapes.
//
// One Server serves both APIs from one base URL:
//
//	DEXSCREENER_URL   = base                 GET /token-pairs/v1/{chainId}/{tokenAddress}
//	                                         GET /tokens/v1/{chainId}/{tokenAddresses}
//	                                         GET /latest/dex/tokens/{tokenAddresses}
//	GECKOTERMINAL_URL = base + "/api/v2"     GET /networks/{network}/tokens/{token_address}/pools
//	                                         GET /networks/{network}/pools/{pool}/ohlcv/{timeframe}
//
// Both are rendered from one Market per mint (so the two aggregators agree),
// and Truth gives what a correct collector derives from it under the
// contract's market rules. Scenario builds a deterministic market from a seed.
//
// A test:
//
//	srv := dexsim.New()
//	srv.SetMarket(mint, dexsim.Scenario(mint, 42))
//	base, err := srv.Start(ctx) // 127.0.0.1, ephemeral port
//	defer srv.Close()
//	// configure DEXSCREENER_URL=base, GECKOTERMINAL_URL=base+"/api/v2"
//	want := srv.Truth(mint) // want.PriceUSDText, want.Selected.Address, want.Totals
//
// Faults are injected per route ("dexscreener", "geckoterminal") through
// Faults(): the generic kinds of package fault, and the protocol kinds
// fault.PairsEmpty ([]), fault.PairsNull (null) and fault.GeckoNotFound (404),
// and the data kinds (fault.HostileHTML, ..., fault.RealWorldOdd), which
// append hostile or odd pairs to the token-pairs and token-pools answers (see
// DataFaultPairs).
// SetRateLimit emulates the documented rate limits (off by default).
package dexsim

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// Route names, for Faults() and SetRateLimit.
const (
	RouteDexScreener   = "dexscreener"
	RouteGeckoTerminal = "geckoterminal"
)

// Documented public rate limits, in requests per minute: DexScreener's pair
// endpoints (docs.dexscreener.com, "rate-limit 300 requests per minute") and
// GeckoTerminal's public API (30 calls per minute).
const (
	DexScreenerRateLimit   = 300
	GeckoTerminalRateLimit = 30
)

// GeckoTerminalPrefix is the path of GeckoTerminal's API on the server: the
// collector's GECKOTERMINAL_URL is URL() + GeckoTerminalPrefix.
const GeckoTerminalPrefix = "/api/v2"

// Server serves both simulated aggregators. Its methods are safe for
// concurrent use, including while it serves.
type Server struct {
	mu      sync.RWMutex
	markets map[string]*Market
	// history is each mint's price over time (history.go).
	history map[string]*priceLog

	faults  *fault.Set
	handler http.Handler

	lmu    sync.Mutex
	limits map[string]*limiter
	now    func() time.Time

	dsRequests, gtRequests atomic.Int64

	smu  sync.Mutex
	srv  *http.Server
	url  string
	done chan struct{}
	stop func() bool
}

// New returns a Server with no market, no fault and no rate limit.
func New() *Server {
	s := &Server{
		markets: map[string]*Market{},
		history: map[string]*priceLog{},
		faults:  fault.NewSet(),
		limits:  map[string]*limiter{},
		now:     time.Now,
	}
	ds := http.NewServeMux()
	ds.HandleFunc("GET /token-pairs/v1/{chainId}/{tokenAddress}", s.tokenPairs)
	ds.HandleFunc("GET /tokens/v1/{chainId}/{tokenAddresses}", s.tokensV1)
	ds.HandleFunc("GET /latest/dex/tokens/{tokenAddresses}", s.latestTokens)
	gt := http.NewServeMux()
	gt.HandleFunc("GET "+GeckoTerminalPrefix+"/networks/{network}/tokens/{tokenAddress}/pools", s.geckoPools)
	gt.HandleFunc("GET "+GeckoTerminalPrefix+"/networks/{network}/pools/{pool}/ohlcv/{timeframe}", s.geckoOHLCV)

	dsH := s.count(&s.dsRequests, s.faults.Middleware(RouteDexScreener, s.limit(RouteDexScreener, ds)))
	gtH := s.count(&s.gtRequests, s.faults.Middleware(RouteGeckoTerminal, s.limit(RouteGeckoTerminal, gt)))
	root := http.NewServeMux()
	root.Handle("/token-pairs/", dsH)
	root.Handle("/tokens/", dsH)
	root.Handle("/latest/", dsH)
	root.Handle(GeckoTerminalPrefix+"/", gtH)
	s.handler = root
	return s
}

// Handler serves both APIs (for httptest or an existing listener).
func (s *Server) Handler() http.Handler { return s.handler }

// Faults is the server's fault table; routes RouteDexScreener and
// RouteGeckoTerminal.
func (s *Server) Faults() *fault.Set { return s.faults }

// Requests counts the requests a route received (faulted or not).
func (s *Server) Requests(route string) int64 {
	switch route {
	case RouteDexScreener:
		return s.dsRequests.Load()
	case RouteGeckoTerminal:
		return s.gtRequests.Load()
	}
	return 0
}

// Start listens on 127.0.0.1 on an ephemeral port and serves until Close or
// until ctx is done. It returns the base URL (DexScreener's base;
// GeckoTerminal's is base + GeckoTerminalPrefix). Starting a started server
// returns its URL.
func (s *Server) Start(ctx context.Context) (string, error) { return s.StartOn(ctx, "", 0) }

// StartOn is Start on the given host (empty: 127.0.0.1) and port (0: an
// ephemeral one).
func (s *Server) StartOn(ctx context.Context, host string, port int) (string, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.srv != nil {
		return s.url, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(listenHost(host), strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	s.srv, s.done, s.url = srv, done, "http://"+ln.Addr().String()
	s.stop = context.AfterFunc(ctx, func() { _ = s.Close() })
	return s.url, nil
}

// URL is the base URL of a started server ("" before Start).
func (s *Server) URL() string {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.url
}

// DexScreenerURL is the value for DEXSCREENER_URL.
func (s *Server) DexScreenerURL() string { return s.URL() }

// GeckoTerminalURL is the value for GECKOTERMINAL_URL.
func (s *Server) GeckoTerminalURL() string { return s.URL() + GeckoTerminalPrefix }

// Close stops serving and closes every connection. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.srv == nil {
		return nil
	}
	s.stop()
	err := s.srv.Close()
	<-s.done
	s.srv, s.url = nil, ""
	return err
}

// SetRateLimit makes route answer 429 beyond perMinute requests in any
// sliding minute (0 turns it off). DexScreenerRateLimit and
// GeckoTerminalRateLimit are the documented limits.
func (s *Server) SetRateLimit(route string, perMinute int) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if perMinute <= 0 {
		delete(s.limits, route)
		return
	}
	s.limits[route] = &limiter{per: perMinute}
}

// limiter is a sliding one-minute window.
type limiter struct {
	per  int
	hits []time.Time
}

func (s *Server) limit(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.lmu.Lock()
		l := s.limits[route]
		var wait time.Duration
		if l != nil {
			now := s.now()
			i := 0
			for i < len(l.hits) && now.Sub(l.hits[i]) >= time.Minute {
				i++
			}
			l.hits = l.hits[i:]
			if len(l.hits) >= l.per {
				wait = time.Minute - now.Sub(l.hits[0])
			} else {
				l.hits = append(l.hits, now)
			}
		}
		s.lmu.Unlock()
		if wait <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		if route == RouteGeckoTerminal {
			writeBody(w, http.StatusTooManyRequests, mustJSON(gtErrors{Errors: []gtError{{Status: "429", Title: "Too Many Requests"}}}))
			return
		}
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	})
}

func (s *Server) count(n *atomic.Int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		next.ServeHTTP(w, r)
	})
}

// render marshals fn's value under the read lock: the model may change as
// soon as the lock is released.
func (s *Server) render(fn func() any) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return mustJSON(fn())
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the simulator's own types always marshal
	}
	return b
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// dsFault answers DexScreener's protocol faults; it reports whether it did.
func dsFault(w http.ResponseWriter, r *http.Request, empty, null []byte) bool {
	f, ok := fault.FromContext(r.Context())
	if !ok {
		return false
	}
	switch f.Kind {
	case fault.PairsEmpty:
		writeBody(w, http.StatusOK, empty)
		return true
	case fault.PairsNull:
		writeBody(w, http.StatusOK, null)
		return true
	}
	return false
}

// GET /token-pairs/v1/{chainId}/{tokenAddress}: a bare array of every pair of
// the token (the simulator also lists its pairs on other chains, which a
// collector must drop); [] for an unknown token or chain.
func (s *Server) tokenPairs(w http.ResponseWriter, r *http.Request) {
	if dsFault(w, r, []byte("[]"), []byte("null")) {
		return
	}
	chain, mint := r.PathValue("chainId"), r.PathValue("tokenAddress")
	data, faulty := dataFault(r)
	skew := skewOf(r)
	body := s.render(func() any {
		m, ok := s.markets[mint]
		if !ok || chain != ChainSolana {
			return []dsPair{}
		}
		m = skewed(m, skew)
		if faulty {
			return dexScreenerWithFault(m, data)
		}
		return dexScreenerPairs(m)
	})
	if faulty {
		body = rawFaultBytes(body)
	}
	writeBody(w, http.StatusOK, body)
}

// GET /tokens/v1/{chainId}/{tokenAddresses}: the pairs on chainId of up to 30
// comma-separated tokens, as a bare array.
func (s *Server) tokensV1(w http.ResponseWriter, r *http.Request) {
	if dsFault(w, r, []byte("[]"), []byte("null")) {
		return
	}
	chain := r.PathValue("chainId")
	body := s.render(func() any {
		return s.pairsOf(r.PathValue("tokenAddresses"), func(p *Pair) bool { return p.ChainID() == chain })
	})
	writeBody(w, http.StatusOK, body)
}

// GET /latest/dex/tokens/{tokenAddresses}: {"schemaVersion":"1.0.0","pairs":
// [...]} over every chain, pairs null when none.
func (s *Server) latestTokens(w http.ResponseWriter, r *http.Request) {
	if dsFault(w, r, []byte(`{"schemaVersion":"1.0.0","pairs":[]}`), []byte(`{"schemaVersion":"1.0.0","pairs":null}`)) {
		return
	}
	body := s.render(func() any {
		pairs := s.pairsOf(r.PathValue("tokenAddresses"), func(*Pair) bool { return true })
		if len(pairs) == 0 {
			pairs = nil
		}
		return dsLatest{SchemaVersion: "1.0.0", Pairs: pairs}
	})
	writeBody(w, http.StatusOK, body)
}

// pairsOf renders the pairs of comma-separated tokens (at most 30), once each.
// The caller holds the read lock.
func (s *Server) pairsOf(list string, keep func(*Pair) bool) []dsPair {
	out := []dsPair{}
	seen := map[string]bool{}
	for i, mint := range strings.Split(list, ",") {
		if i == 30 {
			break
		}
		m, ok := s.markets[strings.TrimSpace(mint)]
		if !ok {
			continue
		}
		for j := range m.Pairs {
			p := &m.Pairs[j]
			if seen[p.ChainID()+"/"+p.Address] || !keep(p) {
				continue
			}
			seen[p.ChainID()+"/"+p.Address] = true
			out = append(out, dexScreenerPair(m, p))
		}
	}
	return out
}

var errGeckoNotFound = mustJSON(gtErrors{Errors: []gtError{{Status: "404", Title: "Not Found"}}})

// GET /api/v2/networks/{network}/tokens/{token_address}/pools: the token's
// solana pools as a JSON:API document; 404 with a JSON:API error body for an
// unknown network or token. page > 1 is empty (the simulator has fewer than
// the API's 20 pools per page).
func (s *Server) geckoPools(w http.ResponseWriter, r *http.Request) {
	if f, ok := fault.FromContext(r.Context()); ok {
		switch f.Kind {
		case fault.GeckoNotFound:
			writeBody(w, http.StatusNotFound, errGeckoNotFound)
			return
		case fault.PairsEmpty:
			writeBody(w, http.StatusOK, []byte(`{"data":[]}`))
			return
		}
	}
	network, mint := r.PathValue("network"), r.PathValue("tokenAddress")
	page := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeBody(w, http.StatusBadRequest, mustJSON(gtErrors{Errors: []gtError{{Status: "400", Title: "Invalid page"}}}))
			return
		}
		page = n
	}
	var found bool
	data, faulty := dataFault(r)
	skew := skewOf(r)
	body := s.render(func() any {
		m, ok := s.markets[mint]
		if !ok || network != ChainSolana {
			return nil
		}
		m = skewed(m, skew)
		found = true
		if page > 1 {
			return gtDoc{Data: []gtPool{}}
		}
		if faulty {
			return gtDocWithFault(m, data)
		}
		return gtDoc{Data: gtPools(m)}
	})
	if !found {
		writeBody(w, http.StatusNotFound, errGeckoNotFound)
		return
	}
	if faulty {
		body = rawFaultBytes(body)
	}
	writeBody(w, http.StatusOK, body)
}

// listenHost is host, or 127.0.0.1 when empty: the simulator serves
// loopback unless told otherwise (a pod of a demo cluster listens on all).
func listenHost(host string) string {
	if host == "" {
		return "127.0.0.1"
	}
	return host
}
