package serve

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/ops"
)

// routeUnmatched is the route label of requests that match no route.
const routeUnmatched = "unmatched"

// metrics are the server's series. Every label value comes from this code:
// route templates, a fixed set of methods, the status codes the edge
// writes.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	respBytes *prometheus.CounterVec
	panics    prometheus.Counter

	connsRefused  prometheus.Counter
	rejectedByNet *prometheus.CounterVec
	logSuppressed prometheus.Counter

	// byRoute caches the children of each known route, so that the request
	// path does no label hashing. Read-only after newMetrics.
	byRoute map[string]*routeMetrics
	// ev are the series of /api/events (events.go).
	ev *eventMetrics
}

// methodLabels are the method label values; anything else is "OTHER".
var methodLabels = [...]string{http.MethodGet, http.MethodHead, http.MethodOptions, "OTHER"}

// cachedCodes are the status codes with pre-resolved children.
var cachedCodes = [...]int{200, 204, 304, 404, 405, 413, 500, 503}

// routeMetrics holds one route's children, resolved on first use (so that
// /metrics lists only combinations that happened) and cached after.
type routeMetrics struct {
	name     string
	requests [len(methodLabels)][len(cachedCodes)]atomic.Pointer[counterBox]
	duration [len(methodLabels)]atomic.Pointer[observerBox]
	bytes    atomic.Pointer[counterBox]
}

type counterBox struct{ prometheus.Counter }
type observerBox struct{ prometheus.Observer }

func methodIndex(m string) int {
	switch m {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	case http.MethodOptions:
		return 2
	}
	return 3
}

func newMetrics(reg prometheus.Registerer, routes []string, s *Server) *metrics {
	f := promauto.With(reg)
	ns := ops.Namespace
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "http_requests_total",
			Help: "Public API requests by route template, method and status code."}, []string{"route", "method", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "edge", Name: "http_request_duration_seconds",
			Help:    "Time to answer a public API request, from its arrival on the host (the kernel's receive timestamp, on 64-bit Linux), by route template and method.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}},
			[]string{"route", "method"}),
		respBytes: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "http_response_bytes_total",
			Help: "Response body bytes written, by route template."}, []string{"route"}),
		panics: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "http_panics_total",
			Help: "Handler panics recovered into a 500 answer."}),
		connsRefused: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "connections_refused_total",
			Help: "Connections answered 503 and closed because EDGE_MAX_CONNECTIONS were open."}),
		rejectedByNet: f.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "http_malformed_requests_total",
			Help: "Requests refused by the HTTP server before the router (400 malformed, 431 headers too large, 501, 505), by status code."},
			[]string{"code"}),
		logSuppressed: f.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "edge", Name: "log_lines_suppressed_total",
			Help: "Access log lines left out by the cap of EDGE_ACCESS_LOG_RATE lines a second per route and status."}),
		byRoute: map[string]*routeMetrics{},
	}
	for _, code := range []int{400, 431, 501, 505} { // listed at 0 before the first
		m.rejectedByNet.WithLabelValues(strconv.Itoa(code))
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "connections_open",
		Help: "Open connections of the public listener, idle keep-alive ones included."},
		func() float64 { return float64(s.conns.open.Load()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "connections_max",
		Help: "EDGE_MAX_CONNECTIONS: the cap of open connections past which new ones are refused."},
		func() float64 { return float64(s.cfg.MaxConnections) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "keepalives_off",
		Help: "1 while keep-alives are off because the open connections reached 90 % of EDGE_MAX_CONNECTIONS (back on below 75 %)."},
		func() float64 { return boolFloat(s.conns.saturated.Load()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "edge", Name: "ready",
		Help: "1 when the edge is ready to serve: it holds every domain, or EDGE_READY_GRACE has passed since its first read of the store, and it is not draining."}, func() float64 { return boolFloat(s.Ready()) })
	m.ev = newEventMetrics(f, s)
	for _, r := range append(routes, routeUnmatched) {
		m.byRoute[r] = &routeMetrics{name: r}
	}
	return m
}

// observe records one request. route is c.FullPath() ("" when unmatched).
func (m *metrics) observe(route, method string, code int, size int, d time.Duration) {
	rm := m.byRoute[route]
	if rm == nil {
		route, rm = routeUnmatched, m.byRoute[routeUnmatched]
	}
	mi := methodIndex(method)
	counted := false
	for ci, c := range cachedCodes {
		if c == code {
			b := rm.requests[mi][ci].Load()
			if b == nil {
				b = &counterBox{m.requests.WithLabelValues(route, methodLabels[mi], strconv.Itoa(code))}
				rm.requests[mi][ci].Store(b)
			}
			b.Inc()
			counted = true
			break
		}
	}
	if !counted { // a code this file did not foresee; still one the edge wrote
		m.requests.WithLabelValues(route, methodLabels[mi], strconv.Itoa(code)).Inc()
	}
	if route == view.PathEvents {
		return // a stream's duration is its client's, not an answer's time
	}
	o := rm.duration[mi].Load()
	if o == nil {
		o = &observerBox{m.duration.WithLabelValues(route, methodLabels[mi])}
		rm.duration[mi].Store(o)
	}
	o.Observe(d.Seconds())
	if size > 0 {
		b := rm.bytes.Load()
		if b == nil {
			b = &counterBox{m.respBytes.WithLabelValues(route)}
			rm.bytes.Store(b)
		}
		b.Add(float64(size))
	}
}

// rejected counts an answer net/http wrote before the router.
func (m *metrics) rejected(status int) {
	m.rejectedByNet.WithLabelValues(strconv.Itoa(status)).Inc()
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
