package dexsim

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// TestFaults produces every fault kind on both routes, as a client sees it.
func TestFaults(t *testing.T) {
	s, c := startServer(t)
	s.LoadScenario(testMint, 9)
	urls := map[string]string{
		RouteDexScreener:   s.DexScreenerURL() + pairsPath(testMint),
		RouteGeckoTerminal: s.GeckoTerminalURL() + "/networks/solana/tokens/" + testMint + "/pools",
	}
	type outcome func(t *testing.T, resp *http.Response, body []byte, err error)
	status := func(code int) outcome {
		return func(t *testing.T, resp *http.Response, _ []byte, err error) {
			if err != nil || resp.StatusCode != code {
				t.Fatalf("want status %d, got %v %v", code, resp, err)
			}
		}
	}
	tests := []struct {
		kind   fault.Kind
		routes []string
		check  outcome
	}{
		{fault.HTTP429, []string{RouteDexScreener, RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusTooManyRequests)(t, resp, b, err)
			if resp.Header.Get("Retry-After") != "1" {
				t.Errorf("429 with Retry-After %q, want the default 1", resp.Header.Get("Retry-After"))
			}
		}},
		{fault.HTTP500, []string{RouteDexScreener, RouteGeckoTerminal}, status(http.StatusInternalServerError)},
		{fault.HTTP503, []string{RouteDexScreener, RouteGeckoTerminal}, status(http.StatusServiceUnavailable)},
		{fault.HTTP403, []string{RouteDexScreener, RouteGeckoTerminal}, status(http.StatusForbidden)},
		{fault.Reset, []string{RouteDexScreener, RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, _ []byte, err error) {
			if err == nil {
				t.Fatalf("reset: got a response %d", resp.StatusCode)
			}
		}},
		{fault.Truncate, []string{RouteDexScreener, RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("truncate: want unexpected EOF reading the body, got %v (%d bytes)", err, len(b))
			}
			if resp.StatusCode != http.StatusOK || len(b) != 64 {
				t.Errorf("truncate: status %d, %d bytes before the drop", resp.StatusCode, len(b))
			}
		}},
		{fault.Malformed, []string{RouteDexScreener, RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusOK)(t, resp, b, err)
			if json.Valid(b) {
				t.Errorf("malformed: body is valid JSON: %s", b)
			}
		}},
		{fault.PairsEmpty, []string{RouteDexScreener}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusOK)(t, resp, b, err)
			if string(b) != "[]" {
				t.Errorf("pairs_empty: %s", b)
			}
		}},
		{fault.PairsNull, []string{RouteDexScreener}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusOK)(t, resp, b, err)
			if string(b) != "null" {
				t.Errorf("pairs_null: %s", b)
			}
		}},
		{fault.PairsEmpty, []string{RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusOK)(t, resp, b, err)
			if string(b) != `{"data":[]}` {
				t.Errorf("gecko pairs_empty: %s", b)
			}
		}},
		{fault.GeckoNotFound, []string{RouteGeckoTerminal}, func(t *testing.T, resp *http.Response, b []byte, err error) {
			status(http.StatusNotFound)(t, resp, b, err)
			if strings.TrimSpace(string(b)) != `{"errors":[{"status":"404","title":"Not Found"}]}` {
				t.Errorf("gecko_not_found: %s", b)
			}
		}},
	}
	for _, tt := range tests {
		for _, route := range tt.routes {
			t.Run(route+"/"+string(tt.kind), func(t *testing.T) {
				s.Faults().Inject(route, fault.Fault{Kind: tt.kind, Times: 1})
				resp, err := c.Get(urls[route])
				var body []byte
				if err == nil {
					body, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				tt.check(t, resp, body, err)
				// Times: 1 means the next request is served normally.
				if st, _ := get(t, c, urls[route]); st != http.StatusOK {
					t.Errorf("after the fault: status %d", st)
				}
			})
		}
	}
}

func TestFaultLatency(t *testing.T) {
	s, c := startServer(t)
	s.LoadScenario(testMint, 9)
	url := s.DexScreenerURL() + pairsPath(testMint)

	s.Faults().Inject(RouteDexScreener, fault.Fault{Kind: fault.Latency, Delay: 50 * time.Millisecond, Times: 1})
	start := time.Now()
	if st, body := get(t, c, url); st != http.StatusOK || !json.Valid(body) {
		t.Fatalf("latency: %d", st)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("answered after %v, before the injected delay", d)
	}

	// A client with a shorter timeout sees a timeout.
	s.Faults().Inject(RouteDexScreener, fault.Fault{Kind: fault.Latency, Delay: 2 * time.Second, Times: 1})
	short := &http.Client{Transport: c.Transport, Timeout: 20 * time.Millisecond}
	_, err := short.Get(url)
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("want a timeout, got %v", err)
	}
}

func TestFaultRoutesAreIndependent(t *testing.T) {
	s := New()
	s.LoadScenario(testMint, 9)
	s.Faults().Inject(RouteDexScreener, fault.Fault{Kind: fault.HTTP503})
	if st, _ := serve(s, poolsPath(testMint)); st != http.StatusOK {
		t.Errorf("gecko affected by a dexscreener fault: %d", st)
	}
	for range 3 {
		if st, _ := serve(s, pairsPath(testMint)); st != http.StatusServiceUnavailable {
			t.Errorf("dexscreener: %d", st)
		}
	}
	s.Faults().Clear(RouteDexScreener)
	if st, _ := serve(s, pairsPath(testMint)); st != http.StatusOK {
		t.Errorf("after Clear: %d", st)
	}
	if s.Requests(RouteDexScreener) != 4 || s.Requests(RouteGeckoTerminal) != 1 {
		t.Errorf("requests: %d %d", s.Requests(RouteDexScreener), s.Requests(RouteGeckoTerminal))
	}
}

func TestRateLimit(t *testing.T) {
	s := New()
	s.LoadScenario(testMint, 9)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	s.SetRateLimit(RouteDexScreener, 3)

	for i := range 3 {
		if st, _ := serve(s, pairsPath(testMint)); st != http.StatusOK {
			t.Fatalf("request %d: %d", i, st)
		}
		now = now.Add(10 * time.Second)
	}
	rec := recorder(s, pairsPath(testMint))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "30" {
		t.Fatalf("4th request: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if st, _ := serve(s, poolsPath(testMint)); st != http.StatusOK {
		t.Errorf("gecko limited by dexscreener's limit: %d", st)
	}
	now = now.Add(31 * time.Second) // the first request leaves the window
	if st, _ := serve(s, pairsPath(testMint)); st != http.StatusOK {
		t.Errorf("after the window: %d", st)
	}

	s.SetRateLimit(RouteGeckoTerminal, 1)
	serve(s, poolsPath(testMint))
	rec = recorder(s, poolsPath(testMint))
	if rec.Code != http.StatusTooManyRequests || !json.Valid(rec.Body.Bytes()) {
		t.Errorf("gecko 429: %d %s", rec.Code, rec.Body)
	}
	s.SetRateLimit(RouteGeckoTerminal, 0)
	if st, _ := serve(s, poolsPath(testMint)); st != http.StatusOK {
		t.Errorf("limit off: %d", st)
	}
}

// TestFault429RetryAfter: the 429 fault says the Retry-After it is given,
// in whole seconds.
func TestFault429RetryAfter(t *testing.T) {
	s, c := startServer(t)
	s.LoadScenario(testMint, 9)
	s.Faults().Inject(RouteDexScreener, fault.Fault{Kind: fault.HTTP429, RetryAfter: 3 * time.Second, Times: 1})
	resp, err := c.Get(s.DexScreenerURL() + pairsPath(testMint))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("%d, Retry-After %q; want 429, 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
