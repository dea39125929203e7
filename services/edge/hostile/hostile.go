// Package hostile is a client of the public API that behaves as an
// attacker would: it trickles request bodies, opens connections and
// leaves them idle, floods a path, sends its own X-Request-Id, and writes
// malformed requests on raw TCP. Tests run it against a server on
// loopback; each function reports what the server did, and when.
package hostile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Answer is what the server sent back on one connection.
type Answer struct {
	// Status is 0 when no answer came.
	Status int
	Header http.Header
	Body   string
	// CloseAnnounced is true when the answer said Connection: close.
	CloseAnnounced bool
	// After is when the answer's head arrived, from the first byte sent.
	After time.Duration
	// Closed is true when the server closed the connection after the
	// answer (or without one), ClosedAfter when.
	Closed      bool
	ClosedAfter time.Duration
}

// readAnswer reads one answer from c, then waits for the server to close
// the connection: until start+wait when the answer announced the close
// (or none came), a moment otherwise.
func readAnswer(c net.Conn, br *bufio.Reader, start time.Time, wait time.Duration) Answer {
	var a Answer
	_ = c.SetReadDeadline(start.Add(wait))
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		a.Status, a.Header, a.After, a.CloseAnnounced = resp.StatusCode, resp.Header, time.Since(start), resp.Close
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		a.Body = string(b)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return a
	}
	// After the answer, a closed connection reads EOF (or a reset). One
	// kept alive is given a moment only.
	if !a.CloseAnnounced && a.Status != 0 {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	}
	if _, err := br.ReadByte(); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		a.Closed, a.ClosedAfter = true, time.Since(start)
	}
	return a
}

// Raw sends request as is on a new connection to addr and reads the
// answer, waiting at most wait for it and for the close.
func Raw(addr, request string, wait time.Duration) (Answer, error) {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return Answer{}, err
	}
	defer func() { _ = c.Close() }()
	start := time.Now()
	if _, err := io.WriteString(c, request); err != nil {
		return Answer{}, err
	}
	return readAnswer(c, bufio.NewReader(c), start, wait), nil
}

// Trickle sends a GET of path whose header announces a body of bodyLen
// bytes, then sends the body one byte every interval, for at most wait:
// the slow-body attack. It reports the answer, if any, and whether and
// when the server closed the connection.
func Trickle(addr, path string, bodyLen int, interval, wait time.Duration) (Answer, error) {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return Answer{}, err
	}
	defer func() { _ = c.Close() }()
	start := time.Now()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: api\r\nContent-Length: %d\r\n\r\n", path, bodyLen); err != nil {
		return Answer{}, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for range bodyLen {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
	a := readAnswer(c, bufio.NewReader(c), start, wait)
	close(stop)
	wg.Wait()
	return a, nil
}

// Idle opens n connections to addr and leaves them idle. With request
// set, each first sends one GET of path (keep-alive) and reads its
// answer: idle keep-alive connections; without it, each sends nothing.
// It returns the connections it holds open (the caller closes them) and
// the answers the server sent at once on connections it refused.
func Idle(addr string, n int, request bool, path string) (open []net.Conn, refused []Answer, err error) {
	type dialed struct {
		c     net.Conn
		br    *bufio.Reader
		start time.Time
	}
	all := make([]dialed, 0, n)
	fail := func(err error) ([]net.Conn, []Answer, error) {
		for _, d := range all {
			_ = d.c.Close()
		}
		return nil, nil, err
	}
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return fail(err)
		}
		all = append(all, dialed{c, bufio.NewReader(c), time.Now()})
		if request {
			if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: api\r\n\r\n", path); err != nil {
				return fail(err)
			}
		}
	}
	// A refused connection gets its 503 at once; a request its answer.
	deadline := time.Now().Add(300 * time.Millisecond)
	if request {
		deadline = time.Now().Add(5 * time.Second)
	}
	for i, d := range all {
		// A deadline already past would fail the read even with the
		// answer waiting: give each connection a moment at least.
		_ = d.c.SetReadDeadline(later(deadline, time.Now().Add(50*time.Millisecond)))
		resp, rerr := http.ReadResponse(d.br, nil)
		if rerr == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			a := Answer{Status: resp.StatusCode, Header: resp.Header, Body: string(b), After: time.Since(d.start),
				CloseAnnounced: resp.Close}
			if resp.StatusCode == http.StatusServiceUnavailable {
				refused = append(refused, a)
				_ = d.c.Close()
				continue
			}
		} else if !errors.Is(rerr, os.ErrDeadlineExceeded) || request {
			for _, d := range all[i:] {
				_ = d.c.Close()
			}
			return open, refused, fmt.Errorf("connection %d: %w", i, rerr)
		}
		_ = d.c.SetReadDeadline(time.Time{})
		open = append(open, d.c)
	}
	return open, refused, nil
}

// Flood sends n GETs of url from conc keep-alive clients at once, each
// with the given headers, and counts the answers by status.
func Flood(url string, n, conc int, header http.Header) (map[int]int, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conc}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		first  error
		wg     sync.WaitGroup
		next   = make(chan struct{}, n)
	)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err == nil {
					req.Header = header.Clone()
					var resp *http.Response
					if resp, err = client.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						mu.Lock()
						counts[resp.StatusCode]++
						mu.Unlock()
						continue
					}
				}
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts, first
}

// Malformed are requests that net/http or the router must refuse, by
// name: what a scanner or a broken client sends.
var Malformed = map[string]string{
	"garbage request line":  "HELLO\r\n\r\n",
	"no Host header":        "GET /api/price HTTP/1.1\r\n\r\n",
	"bad header name":       "GET /api/price HTTP/1.1\r\nHost: api\r\nBad Name: x\r\n\r\n",
	"bad percent escape":    "GET /api/%zz HTTP/1.1\r\nHost: api\r\n\r\n",
	"HTTP/2 request line":   "GET /api/price HTTP/2.0\r\nHost: api\r\n\r\n",
	"unknown transfer code": "GET /api/price HTTP/1.1\r\nHost: api\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"headers too large":     "GET /api/price HTTP/1.1\r\nHost: api\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n",
	"OPTIONS *":             "OPTIONS * HTTP/1.1\r\nHost: api\r\n\r\n",
	"CONNECT":               "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n",
	"absolute-form URI":     "GET http://evil.example/api/nope HTTP/1.1\r\nHost: api\r\n\r\n",
	"dot segments":          "GET /api/../api/./nope HTTP/1.1\r\nHost: api\r\n\r\n",
	"NUL in path":           "GET /api/pri%00ce HTTP/1.1\r\nHost: api\r\n\r\n",
	"GET with a body":       "GET /api/price HTTP/1.1\r\nHost: api\r\nContent-Length: 5\r\n\r\nhello",
	"chunked GET body":      "GET /api/price HTTP/1.1\r\nHost: api\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
