package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/hostile"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/logging"
)

// serving runs h's edge on a loopback port until the test ends, and
// returns its address.
func serving(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.RunOn(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunOn: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	addr := ln.Addr().String()
	waitFor(t, func() bool { return h.srv.Ready() })
	return addr
}

// limits sets the server's limits for a test (zero values keep the
// defaults) and runs the edge on the wall clock.
func limits(maxConns int, read time.Duration) harnessOpt {
	return func(cm *config.Common, c *Config, d *Deps) {
		cm.DrainDelay, cm.ShutdownTimeout = 0, 2*time.Second
		d.Now = time.Now
		if maxConns > 0 {
			c.MaxConnections = maxConns
		}
		if read > 0 {
			c.ReadTimeout = read
		}
	}
}

// errorAnswer checks that a is an answer of the error contract with
// status and code: JSON body, CORS, nosniff, no-store.
func errorAnswer(t *testing.T, name string, a hostile.Answer, status int, code string) {
	t.Helper()
	if a.Status != status {
		t.Errorf("%s: status %d, want %d (body %q)", name, a.Status, status, a.Body)
		return
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Status  int    `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.Body), &body); err != nil || body.Error.Code != code || body.Error.Status != status ||
		body.Error.Message == "" {
		t.Errorf("%s: body %q, want the error contract with code %s", name, a.Body, code)
	}
	for k, want := range map[string]string{"Access-Control-Allow-Origin": "*", "X-Content-Type-Options": "nosniff",
		"Cache-Control": "no-store", "Content-Type": answer.ContentJSON} {
		if got := a.Header.Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", name, k, got, want)
		}
	}
}

// TestTrickledBodyIsCutShort: a GET whose Content-Length body
// comes a byte at a time is answered at once, without reading the body,
// and its connection is closed; so is a POST's.
func TestTrickledBodyIsCutShort(t *testing.T) {
	h := newHarness(t, nil, limits(0, 0))
	h.writeAll()
	addr := serving(t, h)
	for _, path := range []string{view.PathPrice, "/api/nope"} {
		a, err := hostile.Trickle(addr, path, 100, 200*time.Millisecond, 8*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		errorAnswer(t, "trickled GET "+path, a, http.StatusRequestEntityTooLarge, answer.CodeContentTooLarge)
		if a.After > 2*time.Second || !a.CloseAnnounced || !a.Closed || a.ClosedAfter > 3*time.Second {
			t.Errorf("trickled GET %s: answered after %s, closed %v after %s; want both within seconds",
				path, a.After, a.Closed, a.ClosedAfter)
		}
	}
	a, err := hostile.Raw(addr, "POST /api/price HTTP/1.1\r\nHost: api\r\nContent-Length: 100\r\n\r\nx", 8*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	errorAnswer(t, "trickled POST", a, http.StatusMethodNotAllowed, answer.CodeMethodNotAllowed)
	if !a.Closed || a.ClosedAfter > 3*time.Second {
		t.Errorf("trickled POST: closed %v after %s", a.Closed, a.ClosedAfter)
	}
	// A GET without a body keeps its connection.
	if a, _ := hostile.Raw(addr, "GET /api/price HTTP/1.1\r\nHost: api\r\n\r\n", time.Second); a.Status != 200 || a.Closed {
		t.Errorf("plain GET: %d, closed %v", a.Status, a.Closed)
	}
}

// TestIdleFloodIsRefused: past EDGE_MAX_CONNECTIONS new
// connections get a 503 of the error contract at once (never a silent
// refusal); connections that send nothing are closed after
// EDGE_READ_TIMEOUT, and then normal requests succeed again.
func TestIdleFloodIsRefused(t *testing.T) {
	const max = 8
	h := newHarness(t, nil, limits(max, 1500*time.Millisecond))
	h.writeAll()
	addr := serving(t, h)
	open, refused, err := hostile.Idle(addr, max+4, false, "")
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != max || len(refused) != 4 {
		t.Fatalf("%d connections held, %d refused; want %d and 4", len(open), len(refused), max)
	}
	for _, a := range refused {
		errorAnswer(t, "refused connection", a, http.StatusServiceUnavailable, answer.CodeTooManyConnections)
		if a.Header.Get("Retry-After") == "" || !a.CloseAnnounced {
			t.Errorf("refused connection: headers %v", a.Header)
		}
	}
	if got := h.metric("tokendata_edge_connections_refused_total"); got != 4 {
		t.Errorf("connections_refused_total = %v, want 4", got)
	}
	if got := h.srv.serve.ConnCap().Open; got != max {
		t.Errorf("open connections = %d, want %d", got, max)
	}
	// The idle connections are closed after the read timeout; then the
	// API answers again.
	start := time.Now()
	waitFor(t, func() bool {
		a, err := hostile.Raw(addr, "GET /api/price HTTP/1.1\r\nHost: api\r\nConnection: close\r\n\r\n", time.Second)
		return err == nil && a.Status == http.StatusOK
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the API answered again only after %s", d)
	}
}

// TestIdleKeepAlivesMakeRoom: idle keep-alive connections
// count toward the cap, and near it (90 %) the server closes idle ones
// and keeps no new one alive until the count is back under 75 %; a new
// client is served rather than refused.
func TestIdleKeepAlivesMakeRoom(t *testing.T) {
	const max = 20
	h := newHarness(t, nil, limits(max, 0))
	h.writeAll()
	addr := serving(t, h)
	c := h.srv.serve.ConnCap()
	open, refused, err := hostile.Idle(addr, int(c.High), true, view.PathHealth)
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	if err != nil || len(refused) != 0 || len(open) != int(c.High) {
		t.Fatalf("idle keep-alive connections: %v, %d held, %d refused", err, len(open), len(refused))
	}
	waitFor(t, func() bool { return h.srv.serve.ConnCap().Open <= c.Low })
	closed := 0
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !strings.Contains(err.Error(), "timeout") {
			closed++
		}
	}
	if closed < int(c.High-c.Low) {
		t.Errorf("the server closed %d of %d idle keep-alive connections, want %d at least", closed, len(open), c.High-c.Low)
	}
	if a, err := hostile.Raw(addr, "GET /api/price HTTP/1.1\r\nHost: api\r\n\r\n", 2*time.Second); err != nil || a.Status != 200 {
		t.Fatalf("a new client near the cap: %d %v", a.Status, err)
	}
	waitFor(t, func() bool { return !h.srv.serve.ConnCap().Saturated })
}

// TestMalformedRequestsFollowTheErrorContract: what a
// scanner or a broken client sends is answered with the contract's JSON
// error, CORS and nosniff, including what net/http answers before the
// router (400, 431, 501, 505); OPTIONS * gets the preflight's headers.
func TestMalformedRequestsFollowTheErrorContract(t *testing.T) {
	h := newHarness(t, nil, limits(0, 0))
	h.writeAll()
	addr := serving(t, h)
	want := map[string]struct {
		status int
		code   string
	}{
		"garbage request line":  {400, "bad_request"},
		"no Host header":        {400, "bad_request"},
		"bad header name":       {400, "bad_request"},
		"bad percent escape":    {400, "bad_request"},
		"HTTP/2 request line":   {505, "http_version_not_supported"},
		"unknown transfer code": {501, "not_implemented"},
		"headers too large":     {431, "header_too_large"},
		"CONNECT":               {405, answer.CodeMethodNotAllowed},
		"absolute-form URI":     {404, answer.CodeNotFound},
		"dot segments":          {404, answer.CodeNotFound},
		"NUL in path":           {404, answer.CodeNotFound},
		"GET with a body":       {413, answer.CodeContentTooLarge},
		"chunked GET body":      {413, answer.CodeContentTooLarge},
	}
	for name, req := range hostile.Malformed {
		a, err := hostile.Raw(addr, req, 3*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "OPTIONS *" {
			if a.Status != http.StatusNoContent || a.Header.Get("Allow") != answer.AllowedMethods ||
				a.Header.Get("Access-Control-Allow-Origin") != "*" || a.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("OPTIONS *: %d %v", a.Status, a.Header)
			}
			continue
		}
		w, ok := want[name]
		if !ok {
			t.Fatalf("no expectation for %q", name)
		}
		errorAnswer(t, name, a, w.status, w.code)
	}
	// A header block under the limit is served.
	big := "GET /api/price HTTP/1.1\r\nHost: api\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\n\r\n"
	if a, _ := hostile.Raw(addr, big, 3*time.Second); a.Status != 200 {
		t.Errorf("20 KiB of headers: %d", a.Status)
	}
	// net/http's own answers are counted.
	if got := h.metric("tokendata_edge_http_malformed_requests_total", "code", "431"); got != 1 {
		t.Errorf("http_malformed_requests_total{code=431} = %v", got)
	}
}

// TestLogFloodIsCapped: a client flooding an unknown path
// writes nothing at the default level (404 is at debug); a flood of 503s
// writes at most EDGE_ACCESS_LOG_RATE lines a second, the next line says
// how many were left out, and the metrics count every request.
func TestLogFloodIsCapped(t *testing.T) {
	var out logging.Buffer
	h := newHarness(t, nil, func(_ *config.Common, _ *Config, d *Deps) {
		d.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	// /api/price answers 503 (nothing collected): the same flood of 503s
	// and of 404s
	lines := func() int { return strings.Count(out.String(), "\n") }
	for range 10000 {
		h.do(http.MethodGet, "/api/nope")
	}
	if n := lines(); n != 0 {
		t.Errorf("10,000 404s wrote %d log lines at info", n)
	}
	rate := h.srv.cfg.AccessLogRate
	for range 10000 {
		h.do(http.MethodGet, view.PathPrice)
	}
	if n := lines(); n != rate {
		t.Errorf("10,000 503s in one second wrote %d lines, want %d", n, rate)
	}
	if got := h.metric("tokendata_edge_log_lines_suppressed_total"); got != float64(10000-rate) {
		t.Errorf("log_lines_suppressed_total = %v, want %d", got, 10000-rate)
	}
	h.clock.Add(time.Second)
	h.do(http.MethodGet, view.PathPrice)
	last := out.String()[strings.LastIndex(strings.TrimSuffix(out.String(), "\n"), "\n")+1:]
	if !strings.Contains(last, `"suppressed":9990`) || !strings.Contains(last, `"level":"WARN"`) {
		t.Errorf("the next line does not count the ones left out: %s", last)
	}
	if got := h.metric("tokendata_edge_http_requests_total", "route", view.PathPrice, "method", "GET", "code", "503"); got != 10001 {
		t.Errorf("requests counted: %v", got)
	}
}

// TestLogFloodOverTheWire: the same over real connections,
// at debug level, where 404 lines are written but capped.
func TestLogFloodOverTheWire(t *testing.T) {
	var out logging.Buffer
	h := newHarness(t, nil, limits(0, 0), func(_ *config.Common, _ *Config, d *Deps) {
		d.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
		d.Now = func() time.Time { return t0 } // one second of the limiter's clock
	})
	h.writeAll()
	addr := serving(t, h)
	counts, err := hostile.Flood("http://"+addr+"/api/nope", 3000, 8, http.Header{"X-Request-Id": {"flood-1"}})
	if err != nil || counts[404] != 3000 {
		t.Fatalf("flood: %v %v", counts, err)
	}
	n := strings.Count(out.String(), `"msg":"request"`)
	if n != h.srv.cfg.AccessLogRate {
		t.Errorf("3,000 404s at debug level wrote %d request lines, want %d", n, h.srv.cfg.AccessLogRate)
	}
	// Each line's duration has its unit in its name: a number of
	// milliseconds (services/edge/API.md, Logs).
	var first string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			first = l
			break
		}
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatal(err)
	}
	if ms, ok := line["duration_ms"].(float64); !ok || ms < 0 || ms > 60_000 || line["duration"] != nil {
		t.Errorf("access log line without duration_ms in milliseconds: %s", first)
	}
}

// TestRequestIDNeverOnCacheable: the client's X-Request-Id
// comes back only on answers no cache keeps (no-store); no cacheable
// answer (200 or 304 of a data path) carries anything the client sent.
func TestRequestIDNeverOnCacheable(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	const marker = "attacker-42"
	sent := []string{"X-Request-Id", marker, "Origin", "https://" + marker + ".example", "X-Forwarded-Host", marker,
		"X-Forwarded-For", "10.4.2.42", "Cookie", "id=" + marker, "User-Agent", marker}
	for _, p := range allPaths {
		rec := h.do(http.MethodGet, p, sent...)
		cc := rec.Header().Get("Cache-Control")
		if cc == answer.NoStore {
			if got := rec.Header().Get("X-Request-Id"); got != marker {
				t.Errorf("%s (no-store): X-Request-Id %q, want the client's", p, got)
			}
			continue
		}
		answers := []*http.Response{rec.Result()}
		if etag := rec.Header().Get("Etag"); etag != "" {
			answers = append(answers, h.do(http.MethodGet, p, append(sent, "If-None-Match", etag)...).Result())
		}
		for _, resp := range answers {
			for k, vs := range resp.Header {
				for _, v := range vs {
					if strings.Contains(v, marker) || strings.Contains(v, "10.4.2.42") {
						t.Errorf("%s %d (cacheable): %s: %q echoes the client", p, resp.StatusCode, k, v)
					}
				}
			}
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/nope"}, {http.MethodPost, view.PathPrice}, {http.MethodOptions, view.PathPrice},
	} {
		if got := h.do(c.method, c.path, sent...).Header().Get("X-Request-Id"); got != marker {
			t.Errorf("%s %s: X-Request-Id %q, want the client's", c.method, c.path, got)
		}
	}
	empty := newHarness(t, nil)
	if rec := empty.do(http.MethodGet, view.PathPrice, sent...); rec.Code != 503 || rec.Header().Get("X-Request-Id") != marker {
		t.Errorf("503: %d, X-Request-Id %q", rec.Code, rec.Header().Get("X-Request-Id"))
	}
	for _, bad := range []string{"has space", strings.Repeat("x", 65), "semi;colon"} {
		if got := h.do(http.MethodGet, "/api/nope", "X-Request-Id", bad).Header().Get("X-Request-Id"); got != "" {
			t.Errorf("malformed id %q echoed as %q", bad, got)
		}
	}
}

// TestRefusalIsHTTP: the 503 written past the cap is a well-formed
// HTTP/1.1 answer of the error contract.
func TestRefusalIsHTTP(t *testing.T) {
	h := newHarness(t, nil)
	raw := string(h.srv.serve.Refusal())
	if !strings.HasPrefix(raw, "HTTP/1.1 503 Service Unavailable\r\n") || !strings.Contains(raw, "\r\nConnection: close\r\n") {
		t.Fatalf("refusal: %q", raw)
	}
	resp, err := http.ReadResponse(bufioReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.ContentLength != int64(len(b)) || !json.Valid(b) {
		t.Errorf("refusal body %q (Content-Length %d)", b, resp.ContentLength)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
