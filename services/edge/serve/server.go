// Package serve is the HTTP side of the edge: the Gin engine and its
// routes, content negotiation, conditional answers, the connection cap,
// request limits, access logs and request metrics. It looks up the
// current view (services/edge/view) from a Source and writes its
// precomputed answers; it knows nothing of the store.
package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/lifecycle"
)

// Source is where the server finds what it serves (the edge's mirror).
type Source interface {
	// Current is the view to serve now.
	Current() *view.View
	// StatusReport is /api/status of now.
	StatusReport() view.StatusBody
	// Ready reports whether there is data to serve (see Server.Ready).
	Ready() bool
}

// Options are the server's settings (the edge's configuration).
type Options struct {
	Source Source
	// Addr is the public listener's address (HTTP_ADDR).
	Addr                                   string
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                         int
	MaxConnections                         int
	CORSMaxAge                             time.Duration
	RetryAfter                             time.Duration
	AccessLogSample, AccessLogRate         int
	DrainDelay, DrainMax, ShutdownTimeout  time.Duration
	// Assets are the portal's files; nil when the portal is off.
	Assets *view.PortalAssets
	// ErrInternal is the 500 answer (the view renders the same one).
	ErrInternal *answer.Answer
	Log         *slog.Logger
	Now         func() time.Time
	Registry    prometheus.Registerer
	// Events are the settings of /api/events (events.go).
	Events EventOptions
}

// Server is the public HTTP server of the edge.
type Server struct {
	cfg     Options
	src     Source
	log     *slog.Logger
	now     func() time.Time
	started time.Time
	metrics *metrics
	engine  *gin.Engine
	// healthPrefix is /api/health's body up to the uptime.
	healthPrefix []byte
	draining     atomic.Bool

	// logLimit caps the access log's lines per route and status.
	logLimit *logLimiter
	// conns counts and caps the public listener's connections.
	conns *conns

	// precomputed answers that do not depend on the data
	errNotFound, errMethod, errInternal, errBody *answer.Answer
	// errTooManyStreams and errClosing answer /api/events past
	// EDGE_MAX_EVENT_STREAMS and during the shutdown.
	errTooManyStreams, errClosing *answer.Answer
	// fleet writes the streams of /api/events (fleet.go).
	fleet *fleet
}

// New builds the server and its engine, its series registered on
// o.Registry.
func New(o Options) *Server {
	s := &Server{cfg: o, src: o.Source, log: o.Log, now: o.Now, errInternal: o.ErrInternal}
	s.started = s.now()
	s.healthPrefix = healthPrefix()
	s.errNotFound = answer.NewError(http.StatusNotFound, answer.CodeNotFound, "No such endpoint; see /api/openapi.json for the list.", o.RetryAfter)
	s.errMethod = answer.NewError(http.StatusMethodNotAllowed, answer.CodeMethodNotAllowed, "Only GET, HEAD and OPTIONS are allowed.", o.RetryAfter)
	s.errBody = answer.NewError(http.StatusRequestEntityTooLarge, answer.CodeContentTooLarge, "Requests to this API carry no body.", o.RetryAfter)
	s.errTooManyStreams = answer.NewError(http.StatusServiceUnavailable, answer.CodeTooManyStreams,
		"This server has as many event streams open as it takes (EDGE_MAX_EVENT_STREAMS); retry later, or poll.", o.RetryAfter)
	s.errClosing = answer.NewError(http.StatusServiceUnavailable, answer.CodeShuttingDown,
		"This server is shutting down; reconnect, with Last-Event-ID, to reach another one.", o.RetryAfter)
	s.metrics = newMetrics(o.Registry, routePaths(o.Assets), s)
	s.logLimit = newLogLimiter(o.AccessLogRate, s.now, s.metrics.logSuppressed.Inc)
	refusal := serialize(answer.NewError(http.StatusServiceUnavailable, answer.CodeTooManyConnections,
		"The server has too many open connections; retry later.", o.RetryAfter), closeHeaders)
	s.conns = newConns(o.MaxConnections, refusal, s.refusedConn,
		&rawAnswers{maxHeaderBytes: o.MaxHeaderBytes, retryAfter: o.RetryAfter, counted: s.metrics.rejected})
	if o.Events.Hub != nil {
		s.fleet = newFleet(s, o.Events.Hub, o.Events.Heartbeat)
	}
	s.engine = s.newEngine()
	return s
}

// Handler is the public Gin engine.
func (s *Server) Handler() http.Handler { return s.engine }

// Ready reports whether the edge should receive traffic: it is not
// draining, and its source has data to serve.
func (s *Server) Ready() bool { return !s.draining.Load() && s.src.Ready() }

// APIServer is the one public HTTP server of the edge, whoever runs it
// (the edge binary, standalone): its limits, its listener that counts and
// caps connections, and readiness off before the drain.
//
// ReadTimeout is the header timeout too: requests carry no body (see
// refuseBody). Neither deadline costs anything per request: net/http sets
// the read deadline twice per request whatever the settings; WriteTimeout
// adds one deadline update per answer, which make bench does not tell from
// noise. OPTIONS * reaches the router (DisableGeneralOptionsHandler), so
// that it gets the contract's headers.
func (s *Server) APIServer(l net.Listener) *lifecycle.Server {
	srv := &http.Server{
		Addr:                         s.cfg.Addr,
		Handler:                      s.engine,
		ReadHeaderTimeout:            s.cfg.ReadTimeout,
		ReadTimeout:                  s.cfg.ReadTimeout,
		WriteTimeout:                 s.cfg.WriteTimeout,
		IdleTimeout:                  s.cfg.IdleTimeout,
		MaxHeaderBytes:               s.cfg.MaxHeaderBytes,
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.conns.keepAlives = srv.SetKeepAlivesEnabled
	// A request's duration starts at its bytes' arrival on the host
	// (conn.requestRead, requestStart).
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if c, ok := nc.(*conn); ok && c.rx != nil {
			return context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
	srv.ConnState = func(nc net.Conn, st http.ConnState) {
		if c, ok := nc.(*conn); ok && c.rx != nil && st == http.StateActive {
			c.requestRead()
		}
	}
	if hub := s.cfg.Events.Hub; hub != nil {
		// Shutdown waits for the answers under way: the streams end
		// first, and their clients reconnect to another replica.
		srv.RegisterOnShutdown(hub.Close)
	}
	return &lifecycle.Server{
		Name:        "api",
		Listener:    s.conns.wrap(l),
		Srv:         srv,
		BeforeDrain: func() { s.draining.Store(true) },
		Drain:       s.cfg.DrainDelay,
		StayReady:   s.cfg.DrainMax > s.cfg.DrainDelay,
		Linger:      s.cfg.DrainMax,
		Timeout:     s.cfg.ShutdownTimeout,
		Log:         s.log,
	}
}

// refusedConn counts a connection refused at the cap, and logs it (at
// most EDGE_ACCESS_LOG_RATE lines a second).
func (s *Server) refusedConn() {
	s.metrics.connsRefused.Inc()
	if ok, suppressed := s.logLimit.allow("connections", http.StatusServiceUnavailable); ok {
		s.log.Warn("connection refused: EDGE_MAX_CONNECTIONS reached", "max_connections", s.cfg.MaxConnections,
			"suppressed", suppressed)
	}
}

// serveStatus answers /api/status, computed per request from the snapshot,
// the last store check and the status records of the last read.
func (s *Server) serveStatus(c *gin.Context) {
	body, err := answer.EncodeJSON(s.src.StatusReport())
	if err != nil {
		s.log.Error("encode status", "error", err.Error())
		writeResponse(s.errInternal, c.Writer, c.Request)
		return
	}
	writeResponse(answer.NewOK(answer.ContentJSON, answer.NoStore, body, answer.DataInfo{}), c.Writer, c.Request)
}

// ConnCap is the state of the connection cap: the open connections of
// the public listener, the marks at which keep-alives turn off (High,
// 90 % of the cap) and on again (Low, 75 %), and whether they are off.
type ConnCap struct {
	Open, High, Low int64
	Saturated       bool
}

// ConnCap is the connection cap's state now.
func (s *Server) ConnCap() ConnCap {
	return ConnCap{Open: s.conns.open.Load(), High: s.conns.high, Low: s.conns.low, Saturated: s.conns.saturated.Load()}
}

// Refusal is the whole 503 answer written to a connection past the cap.
func (s *Server) Refusal() []byte { return s.conns.refusal }
