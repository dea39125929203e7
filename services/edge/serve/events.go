package serve

import (
	"bytes"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/events"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/ops"
)

// EventOptions are the settings of GET /api/events (the edge's EDGE_EVENT_
// variables).
type EventOptions struct {
	// Hub is the stream's events; nil: the path is not served.
	Hub *events.Hub
	// MaxStreams is the most streams open at once (within the connection
	// cap); past it 503.
	MaxStreams int
	// Heartbeat is how often an idle stream sends a comment line, so that
	// proxies and clients see it alive.
	Heartbeat time.Duration
	// MaxAge is how long a stream lives (±10 %) before the edge ends it and
	// the client reconnects, to any replica, with Last-Event-ID.
	MaxAge time.Duration
	// WriteTimeout bounds one write to a subscriber: a client that reads
	// nothing for that long is dropped.
	WriteTimeout time.Duration
	// MaxPending bounds a subscriber's unsent bytes: past it, it is
	// dropped rather than buffered for.
	MaxPending int64
	// Retry is the reconnection delay the stream asks of clients (±25 %,
	// so that the clients of a replica that ends do not come back at one
	// instant).
	Retry time.Duration
}

// Reasons a stream ends, the label of tokendata_edge_event_streams_ended_total.
const (
	endClient  = "client"   // the client went away: it hung up, or a write failed
	endSlow    = "slow"     // unsent data past its bound, or a write timed out
	endMaxAge  = "max_age"  // EDGE_EVENT_MAX_AGE
	endClosing = "shutdown" // the edge shuts down
	endRefused = "refused"  // EDGE_MAX_EVENT_STREAMS reached: 503
)

// eventMetrics are the stream's series.
type eventMetrics struct {
	open      atomic.Int64
	waiting   atomic.Int64
	events    *prometheus.CounterVec
	delivered prometheus.Counter
	ended     *prometheus.CounterVec
	fanout    prometheus.Histogram
}

func newEventMetrics(f promauto.Factory, s *Server) *eventMetrics {
	ns := ops.Namespace
	m := &eventMetrics{
		events: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "events_published_total",
			Help: "Events published on /api/events, by event name."}, []string{"event"}),
		delivered: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "events_delivered_total",
			Help: "Events written to /api/events subscribers (one per subscriber and event)."}),
		ended: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "event_streams_ended_total",
			Help: "Streams of /api/events ended or refused, by reason: client, slow (dropped), max_age, shutdown, refused (EDGE_MAX_EVENT_STREAMS)."},
			[]string{"reason"}),
		fanout: f.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "edge", Name: "event_fanout_seconds",
			Help:    "Time from an event's publication to its write to a subscriber.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}}),
	}
	for _, r := range []string{endClient, endSlow, endMaxAge, endClosing, endRefused} {
		m.ended.WithLabelValues(r)
	}
	for _, n := range events.Names {
		m.events.WithLabelValues(n)
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "event_streams_open",
		Help: "Streams of /api/events open now."}, func() float64 { return float64(m.open.Load()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "event_streams_waiting",
		Help: "Streams of /api/events on a goroutine of their own now: their socket was full, and each waits for its client to read (within EDGE_EVENT_WRITE_TIMEOUT a write) until it has caught up."},
		func() float64 { return float64(m.waiting.Load()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "event_streams_max",
		Help: "EDGE_MAX_EVENT_STREAMS: the most streams of /api/events open at once."},
		func() float64 { return float64(s.cfg.Events.MaxStreams) })
	return m
}

// Published counts events the hub published (the edge's wiring calls it).
func (s *Server) Published(evs []*events.Event) {
	for _, e := range evs {
		s.metrics.ev.events.WithLabelValues(e.Name).Inc()
	}
}

var (
	hdrEventStream = answer.One("text/event-stream; charset=utf-8")
	hdrNoBuffering = answer.One("no")
)

// serveEvents answers GET /api/events: a server-sent-event stream of the
// changes (services/edge/events), until the client leaves, the stream's
// maximum age, or the edge's shutdown. HEAD gets the stream's headers.
//
// A stream takes its connection over from net/http (Hijack): its head and
// first events are written here, the body is delimited by the
// connection's close, and the edge's fleet of writers (fleet.go) writes
// the hub's shared event bytes straight to the socket, with no goroutine
// of the stream's own while it keeps up. Left to net/http, each stream
// would keep a handler goroutine parked under the middleware (16 KiB of
// stack), a background reader and 10 KiB of per-connection buffers that a
// stream never uses (make bench-events). The request is logged and
// counted when the stream starts. A client that hangs up (closes, resets
// or half-closes its connection) ends its stream at once on Linux (the
// fleet watches its socket, hangup_linux.go); elsewhere at the next
// write, a heartbeat at the latest.
func (s *Server) serveEvents(c *gin.Context) {
	o := s.cfg.Events
	m := s.metrics.ev
	if m.open.Add(1) > int64(o.MaxStreams) {
		m.open.Add(-1)
		m.ended.WithLabelValues(endRefused).Inc()
		writeResponse(s.errTooManyStreams, c.Writer, c.Request)
		return
	}
	streaming := false
	defer func() {
		if !streaming {
			m.open.Add(-1)
		}
	}()
	first, cur, _, err := o.Hub.Subscribe(c.GetHeader("Last-Event-ID"))
	if err != nil {
		m.ended.WithLabelValues(endClosing).Inc()
		writeResponse(s.errClosing, c.Writer, c.Request)
		return
	}
	w := c.Writer
	h := w.Header()
	h["Content-Type"] = hdrEventStream
	h["Cache-Control"] = hdrNoStore
	h["X-Accel-Buffering"] = hdrNoBuffering // nginx: pass each event on at once
	echoRequestID(h, c.Request)
	if c.Request.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		w.WriteHeaderNow()
		return
	}
	nc, _, err := http.NewResponseController(w).Hijack()
	if err != nil { // not an HTTP/1 connection of net/http's
		s.log.Error("event stream: the connection cannot be taken over", "error", err.Error())
		writeResponse(s.errInternal, w, c.Request)
		return
	}
	streaming = true
	s.fleet.add(nc, streamHead(h, jitter(o.Retry, 0.25)), first, cur)
}

// streamHead is a stream's status line, headers and retry field.
func streamHead(h http.Header, retry time.Duration) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("Date: ")
	b.WriteString(time.Now().UTC().Format(http.TimeFormat))
	b.WriteString("\r\nConnection: close\r\n\r\nretry: ")
	b.WriteString(strconv.FormatInt(retry.Milliseconds(), 10))
	b.WriteString("\n\n")
	return b.Bytes()
}

// maxSendBuffer caps a stream socket's kernel send buffer.
const maxSendBuffer = 64 << 10

// socket is the TCP connection under nc, its send buffer bounded:
// without a bound Linux grows it to megabytes, which a client that stops
// reading would hold in kernel memory. With it, writes to such a client
// block once the buffer is full and time out (EDGE_EVENT_WRITE_TIMEOUT).
// nc itself when it is not TCP. Only the edge's own counting wrapper is
// looked through: under any other (TLS), the stream's bytes are not the
// socket's.
func socket(nc net.Conn, maxPending int64) net.Conn {
	c := nc
	if x, ok := c.(*conn); ok {
		c = x.Conn
	}
	if x, ok := c.(*net.TCPConn); ok {
		_ = x.SetWriteBuffer(int(min(maxPending, maxSendBuffer)))
		return x
	}
	return nc
}

// heartbeat is the comment an idle stream sends.
var heartbeat = []byte(": heartbeat\n\n")

// jitter is d ± frac of it, at random.
func jitter(d time.Duration, frac float64) time.Duration {
	return time.Duration(float64(d) * (1 + frac*(2*rand.Float64()-1))) //nolint:gosec // spreading reconnections, not a secret
}

// eventRoutes adds /api/events to e when the stream is on.
func (s *Server) eventRoutes(e *gin.Engine) {
	if s.cfg.Events.Hub == nil {
		return
	}
	e.GET(view.PathEvents, s.serveEvents)
	e.HEAD(view.PathEvents, s.serveEvents)
	e.OPTIONS(view.PathEvents, s.preflight)
}

// EventsCounter is events_published_total of event name (tests).
func (s *Server) EventsCounter(name string) prometheus.Counter {
	return s.metrics.ev.events.WithLabelValues(name)
}

// StreamsEndedCounter is event_streams_ended_total of reason (tests).
func (s *Server) StreamsEndedCounter(reason string) prometheus.Counter {
	return s.metrics.ev.ended.WithLabelValues(reason)
}

// OpenStreams is the number of streams open now.
func (s *Server) OpenStreams() int64 { return s.metrics.ev.open.Load() }

// WaitingStreams is the number of streams waiting for their client now.
func (s *Server) WaitingStreams() int64 { return s.metrics.ev.waiting.Load() }
