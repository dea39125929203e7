package serve

import (
	"bytes"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
)

// conns is the public listener's bookkeeping: the open connections, the
// cap past which a new one is answered 503, and keep-alives turned off
// near the cap, so that idle connections make room first.
//
// Near the cap (90 %) the server stops keeping connections alive: the
// idle ones are closed at once and the busy ones after their answer; it
// keeps them alive again below 75 %. A connection that never sends a
// request is closed after EDGE_READ_TIMEOUT. Everything here runs per
// connection, never per request.
type conns struct {
	max, high, low int64
	open           atomic.Int64
	saturated      atomic.Bool // keep-alives are off
	refused        func()
	// keepAlives is the server's SetKeepAlivesEnabled (nil: none).
	keepAlives func(on bool)
	// refusal is the whole 503 answer of a connection past the cap.
	refusal []byte
	// lingering bounds the refused connections being closed gently.
	lingering chan struct{}
	kick      chan struct{}
	// answers rewrites the error answers net/http writes by itself.
	answers *rawAnswers
}

// lingerSlots bounds the refused connections kept open for a moment, so
// that the client reads the 503 before the close; past it they are
// closed at once.
const lingerSlots = 128

func newConns(max int, refusal []byte, refused func(), answers *rawAnswers) *conns {
	m := int64(max)
	return &conns{max: m, high: m - m/10, low: m - m/4, refusal: refusal, refused: refused, answers: answers,
		lingering: make(chan struct{}, lingerSlots), kick: make(chan struct{}, 1)}
}

// wrap returns l counting through c. It runs until l is closed.
func (c *conns) wrap(l net.Listener) net.Listener {
	stampListener(l)
	ll := &limitListener{Listener: l, c: c, done: make(chan struct{})}
	go c.adjust(ll.done)
	return ll
}

// adjust turns keep-alives off when the open connections reach the high
// mark and on again below the low mark. It runs in its own goroutine:
// turning them off closes idle connections, whose Close calls back here.
func (c *conns) adjust(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-c.kick:
		}
		n := c.open.Load()
		switch {
		case !c.saturated.Load() && n >= c.high:
			c.saturated.Store(true)
			if c.keepAlives != nil {
				c.keepAlives(false)
			}
		case c.saturated.Load() && n <= c.low:
			c.saturated.Store(false)
			if c.keepAlives != nil {
				c.keepAlives(true)
			}
		}
	}
}

func (c *conns) nudge() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *conns) release() {
	if n := c.open.Add(-1); n <= c.low && c.saturated.Load() {
		c.nudge()
	}
}

// refuse answers a connection past the cap with the 503 and closes it.
// The answer goes out before the client's request is read (a few hundred
// bytes to a fresh socket do not block); the connection is then half
// closed and its input drained for a moment, so that the close does not
// reset the connection before the client has read the answer.
func (c *conns) refuse(nc net.Conn) {
	c.refused()
	_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := nc.Write(c.refusal); err != nil {
		_ = nc.Close()
		return
	}
	select {
	case c.lingering <- struct{}{}:
	default:
		_ = nc.Close()
		return
	}
	go func() {
		defer func() { <-c.lingering }()
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var buf [512]byte
		for {
			if _, err := nc.Read(buf[:]); err != nil {
				break
			}
		}
		_ = nc.Close()
	}()
}

type limitListener struct {
	net.Listener
	c        *conns
	done     chan struct{}
	stopOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.c.open.Add(1)
		if n > l.c.max {
			l.c.open.Add(-1)
			l.c.refuse(nc)
			continue
		}
		if n >= l.c.high && !l.c.saturated.Load() {
			l.c.nudge()
		}
		return &conn{Conn: nc, c: l.c, rx: newRxStamps(nc)}, nil
	}
}

func (l *limitListener) Close() error {
	l.stopOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn is one counted connection. It also rewrites, on their way out, the
// error answers net/http writes itself before any handler runs (see
// rawAnswers).
type conn struct {
	net.Conn
	c      *conns
	closed atomic.Bool
	// rx reads with the kernel's receive timestamps (nil: plain reads).
	rx *rxStamps
	// arrival is the receive time (Unix ns) of the bytes the last read
	// returned, 0 when unknown; waited is how long the request net/http
	// read last had waited in the socket when it was read (ns), set on
	// the connection's goroutine before the handler runs (requestRead).
	arrival, waited atomic.Int64
}

// maxWait caps the wait a request is said to have had before the server
// read it: a longer one is as likely a step of the wall clock (the
// kernel's timestamps are CLOCK_REALTIME) as a wait, and counts as
// maxWait, so that a stopped edge's worst answers still show (above the
// histogram's last bucket, as anything past 1 s). A negative one (the
// clock stepped back) counts as none.
const maxWait = time.Minute

func (c *conn) Read(p []byte) (int, error) {
	if c.rx == nil {
		return c.Conn.Read(p)
	}
	n, at, err := c.rx.read(p)
	if n > 0 {
		c.arrival.Store(at)
	}
	return n, err
}

// requestRead is called once net/http has read a request's head, before
// its handler (the server's ConnState hook, StateActive): the request's
// wait is from its bytes' arrival to now.
func (c *conn) requestRead() {
	var w int64
	if at := c.arrival.Load(); at != 0 {
		w = min(max(time.Now().UnixNano()-at, 0), int64(maxWait))
	}
	c.waited.Store(w)
}

// connKey is the request context's key of its *conn (the server's
// ConnContext).
type connKey struct{}

// requestStart is when r reached the host: now, less the wait its bytes
// had in the socket before the server read them (none when unknown).
func requestStart(r *http.Request) time.Time {
	now := time.Now()
	if c, ok := r.Context().Value(connKey{}).(*conn); ok {
		if w := c.waited.Load(); w > 0 {
			return now.Add(-time.Duration(w))
		}
	}
	return now
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.c.release()
	}
	return err
}

// NetConn is the connection it counts.
func (c *conn) NetConn() net.Conn { return c.Conn }

// CloseWrite lets net/http half-close the connection after an error
// answer, as it does on a bare TCP connection.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error) {
	// Every answer of the handler goes out through here: one byte
	// compare rules out a 1xx, 2xx or 3xx status line.
	if len(p) > 12 && p[9] >= '4' && c.c.answers != nil {
		if a := c.c.answers.rewrite(p); a != nil {
			if _, err := c.Conn.Write(a); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// rawAnswers turns the answers net/http writes by itself, before any
// handler (400 malformed request, 431 headers too large, 501 unsupported
// transfer encoding, 505 HTTP version), into answers of the error
// contract: JSON body, CORS, nosniff, no-store. net/http writes each of
// them in one Write, as a status line, exactly netHTTPErrorHeaders, and a
// text body; no answer of the handler starts that way (its first header
// is Access-Control-Allow-Origin).
type rawAnswers struct {
	maxHeaderBytes int
	retryAfter     time.Duration
	counted        func(status int)
}

const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

var http11 = []byte("HTTP/1.1 ")

func (r *rawAnswers) rewrite(p []byte) []byte {
	if !bytes.HasPrefix(p, http11) {
		return nil
	}
	eol := bytes.Index(p, []byte("\r\n"))
	if eol < 12 || !bytes.HasPrefix(p[eol:], []byte(netHTTPErrorHeaders)) {
		return nil
	}
	status, err := strconv.Atoi(string(p[9:12]))
	if err != nil || status < 400 || status > 599 {
		return nil
	}
	// The status line is "NNN Reason" or "NNN Reason: detail"; the detail
	// is one of net/http's fixed texts ("missing required Host header").
	var detail string
	if _, d, ok := bytes.Cut(p[13:eol], []byte(": ")); ok {
		detail = plainText(d)
	}
	if r.counted != nil {
		r.counted(status)
	}
	return serialize(r.answer(status, detail), closeHeaders)
}

// answer is the contract's error answer for a status net/http wrote.
func (r *rawAnswers) answer(status int, detail string) *answer.Answer {
	code, msg := "bad_request", "Malformed HTTP request."
	switch status {
	case http.StatusBadRequest:
		if detail != "" {
			msg = "Malformed HTTP request: " + detail + "."
		}
	case http.StatusRequestHeaderFieldsTooLarge:
		code = "header_too_large"
		msg = "The request line and headers exceed " + strconv.Itoa(r.maxHeaderBytes/1024) + " KiB."
	case http.StatusNotImplemented:
		code, msg = "not_implemented", "Unsupported transfer encoding."
	case http.StatusHTTPVersionNotSupported:
		code, msg = "http_version_not_supported", "Unsupported HTTP version; use HTTP/1.1."
	default:
		code, msg = "bad_request", http.StatusText(status)+"."
	}
	return answer.NewError(status, code, msg, r.retryAfter)
}

// plainText keeps letters, digits and spaces of s, at most 80 bytes: a
// detail net/http puts in a status line, never a client's bytes.
func plainText(s []byte) string {
	out := make([]byte, 0, min(len(s), 80))
	for _, b := range s {
		if len(out) == cap(out) {
			break
		}
		if b == ' ' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') {
			out = append(out, b)
		}
	}
	return string(out)
}

// closeHeaders are the headers of an answer written outside the router:
// those the middleware sets on every answer, and the close.
var closeHeaders = []answer.Header{
	{Key: "Access-Control-Allow-Origin", Values: hdrAllowOrigin},
	{Key: "Access-Control-Expose-Headers", Values: hdrExposeHeaders},
	{Key: "X-Content-Type-Options", Values: hdrNoSniff},
	{Key: "Connection", Values: hdrClose},
}

var hdrClose = answer.One("close")

// serialize writes r as a whole HTTP/1.1 answer, with extra headers,
// sorted as net/http sorts them.
func serialize(r *answer.Answer, extra []answer.Header) []byte {
	hs := append(append([]answer.Header(nil), r.Headers...), extra...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].Key < hs[j].Key })
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(r.Status) + " " + http.StatusText(r.Status) + "\r\n")
	for _, h := range hs {
		for _, v := range h.Values {
			b.WriteString(h.Key + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	b.Write(r.Body)
	return b.Bytes()
}
