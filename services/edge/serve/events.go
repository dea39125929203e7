package serve

import (
	"context"
	"errors"
	"math"
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
	endClient  = "client"   // the client went away
	endSlow    = "slow"     // unsent data past its bound, or a write timed out
	endMaxAge  = "max_age"  // EDGE_EVENT_MAX_AGE
	endClosing = "shutdown" // the edge shuts down
	endRefused = "refused"  // EDGE_MAX_EVENT_STREAMS reached: 503
)

// eventMetrics are the stream's series.
type eventMetrics struct {
	open      atomic.Int64
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
func (s *Server) serveEvents(c *gin.Context) {
	o := s.cfg.Events
	m := s.metrics.ev
	if m.open.Add(1) > int64(o.MaxStreams) {
		m.open.Add(-1)
		m.ended.WithLabelValues(endRefused).Inc()
		writeResponse(s.errTooManyStreams, c.Writer, c.Request)
		return
	}
	defer m.open.Add(-1)
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
	boundSendBuffer(c.Request.Context(), o.MaxPending)
	// The controller of net/http's own writer: Gin's Flush drops the
	// error of a failed flush, and a subscriber that stopped reading must
	// be seen as one.
	var base http.ResponseWriter = w
	if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		base = u.Unwrap()
	}
	rc := http.NewResponseController(base)
	// The server's read and write timeouts bound one answer; a stream is
	// bounded by its maximum age, and each write by WriteTimeout.
	_ = rc.SetReadDeadline(time.Time{})
	w.WriteHeader(http.StatusOK)
	retry := jitter(o.Retry, 0.25)
	buf := make([]byte, 0, 64)
	buf = append(buf, "retry: "...)
	buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
	buf = append(buf, "\n\n"...)
	// The first events (the snapshot of a new client, or what a resuming
	// one missed) were published before it came: not fan-out.
	if !s.sendEvents(w, rc, buf, first, false) {
		m.ended.WithLabelValues(endSlow).Inc()
		return
	}
	age := time.NewTimer(jitter(o.MaxAge, 0.1))
	defer age.Stop()
	beat := time.NewTicker(o.Heartbeat)
	defer beat.Stop()
	ctx := c.Request.Context()
	for {
		evs, wake, err := o.Hub.Next(&cur, uint64(o.MaxPending))
		switch {
		case errors.Is(err, events.ErrClosed):
			m.ended.WithLabelValues(endClosing).Inc()
			return
		case err != nil:
			m.ended.WithLabelValues(endSlow).Inc()
			return
		}
		if len(evs) > 0 {
			if !s.sendEvents(w, rc, nil, evs, true) {
				m.ended.WithLabelValues(endSlow).Inc()
				return
			}
			beat.Reset(o.Heartbeat)
			continue
		}
		select {
		case <-wake:
		case <-beat.C:
			if !s.sendEvents(w, rc, heartbeat, nil, false) {
				m.ended.WithLabelValues(endSlow).Inc()
				return
			}
		case <-age.C:
			m.ended.WithLabelValues(endMaxAge).Inc()
			return
		case <-ctx.Done():
			m.ended.WithLabelValues(endClient).Inc()
			return
		}
	}
}

// connKey is the context key of a request's connection.
type connKey struct{}

// withConn keeps a connection in its requests' context.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// boundSendBuffer sets the kernel's send buffer of a stream's socket to
// maxPending: with the hub's own bound on what a subscriber has not been
// handed, this bounds what a client that stops reading holds, in the
// edge and in the kernel, and its writes block (then time out) once the
// buffer is full, rather than filling megabytes of autotuned buffer.
func boundSendBuffer(ctx context.Context, maxPending int64) {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	for c != nil {
		switch x := c.(type) {
		case *net.TCPConn:
			_ = x.SetWriteBuffer(int(min(maxPending, math.MaxInt32)))
			return
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return
		}
	}
}

// heartbeat is the comment an idle stream sends.
var heartbeat = []byte(": heartbeat\n\n")

// sendEvents writes prefix and evs, each within WriteTimeout, and
// flushes; false when the client could not take them. With fanout, the
// time since each event's publication goes to event_fanout_seconds.
func (s *Server) sendEvents(w gin.ResponseWriter, rc *http.ResponseController, prefix []byte, evs []*events.Event, fanout bool) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Events.WriteTimeout))
	if len(prefix) > 0 {
		if _, err := w.Write(prefix); err != nil {
			return false
		}
	}
	for _, e := range evs {
		if _, err := w.Write(e.Wire()); err != nil {
			return false
		}
	}
	if err := rc.Flush(); err != nil {
		return false
	}
	if len(evs) > 0 {
		now := time.Now()
		m := s.metrics.ev
		m.delivered.Add(float64(len(evs)))
		if fanout {
			for _, e := range evs {
				m.fanout.Observe(now.Sub(e.At).Seconds())
			}
		}
	}
	return true
}

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
