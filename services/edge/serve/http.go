package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/buildinfo"
	"github.com/tokendata/tokendata/shared/contract"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// routePaths lists every route template (metric labels).
func routePaths(portal *view.PortalAssets) []string {
	out := []string{view.PathHealth, view.PathStatus, view.PathHistory, view.PathEvents}
	for i, r := range view.RenderedRoutes {
		if i != view.RoutePortal || portal != nil {
			out = append(out, r.Path)
		}
	}
	if portal != nil {
		out = append(out, view.PathPortalIndex)
		for _, a := range portal.List() {
			out = append(out, a.Path)
		}
	}
	return out
}

// newEngine builds the Gin engine. Middleware order: recovery, access
// log, metrics, CORS, security headers, body refusal. The client's
// X-Request-Id is echoed by the responder, on answers no cache keeps.
func (s *Server) newEngine() *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false // /api/price/ is not a path of the API: 404, with CORS
	e.RedirectFixedPath = false
	e.ContextWithFallback = false
	e.Use(s.recovery(), s.accessLog(), s.observe(), s.cors(), securityHeaders, s.refuseBody)
	for i, r := range view.RenderedRoutes {
		if i == view.RoutePortal && s.cfg.Assets == nil {
			continue
		}
		h := s.serveRendered(i)
		e.GET(r.Path, h)
		e.HEAD(r.Path, h)
		e.OPTIONS(r.Path, s.preflight)
	}
	e.GET(view.PathHistory, s.serveHistory)
	e.HEAD(view.PathHistory, s.serveHistory)
	e.OPTIONS(view.PathHistory, func(c *gin.Context) {
		if _, _, ok := historyIndex(c.Param("measure"), c.Param("window")); !ok {
			writeResponse(s.errNotFound, c.Writer, c.Request)
			return
		}
		s.preflight(c)
	})
	if a := s.cfg.Assets; a != nil {
		h := s.serveRendered(view.RoutePortal)
		e.GET(view.PathPortalIndex, h)
		e.HEAD(view.PathPortalIndex, h)
		e.OPTIONS(view.PathPortalIndex, s.preflight)
		for _, as := range a.List() {
			h := func(c *gin.Context) { writeResponse(as.Resp, c.Writer, c.Request) }
			e.GET(as.Path, h)
			e.HEAD(as.Path, h)
			e.OPTIONS(as.Path, s.preflight)
		}
	}
	s.eventRoutes(e)
	for path, h := range map[string]gin.HandlerFunc{view.PathHealth: s.serveHealth, view.PathStatus: s.serveStatus} {
		e.GET(path, h)
		e.HEAD(path, h)
		e.OPTIONS(path, s.preflight)
	}
	// WriteHeaderNow marks the answer written even for HEAD (no body), so
	// that Gin does not append its own text/plain 404 or 405.
	e.NoRoute(func(c *gin.Context) {
		switch {
		case c.Request.Method == http.MethodOptions && c.Request.RequestURI == "*":
			// OPTIONS * asks what the server allows (net/http would answer
			// it itself, without CORS; the server hands it here).
			s.preflight(c)
		case c.Request.Method == http.MethodConnect:
			// CONNECT names a host, not a path: no method of this API.
			writeResponse(s.errMethod, c.Writer, c.Request)
		default:
			writeResponse(s.errNotFound, c.Writer, c.Request)
		}
		c.Writer.WriteHeaderNow()
	})
	e.NoMethod(func(c *gin.Context) { writeResponse(s.errMethod, c.Writer, c.Request); c.Writer.WriteHeaderNow() })
	return e
}

func (s *Server) serveRendered(i int) gin.HandlerFunc {
	return func(c *gin.Context) {
		writeResponse(s.src.Current().Routes[i], c.Writer, c.Request)
	}
}

// serveHistory answers /api/history/{measure}/{window}: the pre-rendered
// answer, or the usual 404 for a measure or window the API does not have.
func (s *Server) serveHistory(c *gin.Context) {
	i, j, ok := historyIndex(c.Param("measure"), c.Param("window"))
	if !ok {
		writeResponse(s.errNotFound, c.Writer, c.Request)
		return
	}
	writeResponse(s.src.Current().Hist[i][j].Resp, c.Writer, c.Request)
}

// historyIndex finds a history answer by its path segments.
func historyIndex(measure, window string) (i, j int, ok bool) {
	i, j = -1, -1
	for k, hm := range snapshot.HistoryMeasures {
		if hm.Segment == measure {
			i = k
		}
	}
	for k, w := range contract.HistoryWindows {
		if string(w) == window {
			j = k
		}
	}
	return i, j, i >= 0 && j >= 0
}

var (
	hdrAllowOrigin   = answer.One("*")
	hdrExposeHeaders = answer.One("ETag, Last-Modified, X-Data-Updated-At, X-Data-Stale, Retry-After, X-Request-Id, Content-Digest, Signature-Input, Signature")
	hdrNoSniff       = answer.One("nosniff")
	hdrAllowMethods  = answer.One(answer.AllowedMethods)
	hdrAllowHeaders  = answer.One("If-None-Match, If-Modified-Since, Cache-Control, X-Request-Id, Last-Event-ID")
	hdrNoStore       = answer.One(answer.NoStore)
)

// preflight answers a CORS preflight: 204, the allowed methods and a max
// age. The allowed origin is set by the CORS middleware.
func (s *Server) preflight(c *gin.Context) {
	h := c.Writer.Header()
	h["Access-Control-Allow-Methods"] = hdrAllowMethods
	h["Access-Control-Allow-Headers"] = hdrAllowHeaders
	h["Access-Control-Max-Age"] = answer.One(strconv.Itoa(int(s.cfg.CORSMaxAge / time.Second)))
	h["Allow"] = hdrAllowMethods
	h["Cache-Control"] = hdrNoStore
	echoRequestID(h, c.Request)
	c.Writer.WriteHeader(http.StatusNoContent)
}

// refuseBody keeps request bodies off the server. The API reads none, and
// net/http would read what is left of one after the handler, with no
// deadline: a client trickling a body a byte a second would hold the
// connection for as long as it likes. An answer to a request with a body
// closes the connection, and the body is never read (its read deadline is
// now); a GET, HEAD or OPTIONS with a body is answered 413 at once, other
// methods get their usual 404 or 405.
func (s *Server) refuseBody(c *gin.Context) {
	if c.Request.ContentLength == 0 {
		c.Next()
		return
	}
	c.Writer.Header()["Connection"] = hdrClose
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now()) // not supported by recorders in tests
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		writeResponse(s.errBody, c.Writer, c.Request)
		c.Writer.WriteHeaderNow()
		c.Abort()
		return
	}
	c.Next()
}

// recovery turns a panic into a 500 internal answer; the panic and its
// stack go to the log, never to the client.
func (s *Server) recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value, compared as net/http does
				panic(p)
			}
			s.metrics.panics.Inc()
			route := routeLabel(c.FullPath())
			if ok, suppressed := s.logLimit.allow(route, 0); ok { // status 0: the panic lines
				s.log.Error("panic", "route", route, "method", c.Request.Method,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()), "suppressed", suppressed)
			}
			if !c.Writer.Written() {
				writeResponse(s.errInternal, c.Writer, c.Request)
			}
			c.Abort()
		}()
		c.Next()
	}
}

// echoRequestID copies a well-formed X-Request-Id of the client (an
// ingress or a caller that correlates) onto an answer no cache keeps
// (no-store: errors, health, status, preflight). A cacheable answer never
// carries it: a shared cache would serve one client's id to everyone. The
// edge makes up no id per answer; the access log makes one for its own
// line instead (requestIDs.next).
func echoRequestID(h http.Header, req *http.Request) {
	if v := req.Header["X-Request-Id"]; len(v) == 1 && validRequestID(v[0]) {
		h["X-Request-Id"] = v
	}
}

// requestIDs makes ids for log lines of requests that came without one.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (r *requestIDs) next() string { return r.prefix + strconv.FormatUint(r.n.Add(1), 36) }

// requestIDOf is the client's well-formed id, or a new one.
func requestIDOf(c *gin.Context, ids *requestIDs) string {
	if v := c.Request.Header["X-Request-Id"]; len(v) == 1 && validRequestID(v[0]) {
		return v[0]
	}
	return ids.next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch ch := id[i]; {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '-', ch == '_', ch == '.':
		default:
			return false
		}
	}
	return true
}

func routeLabel(fullPath string) string {
	if fullPath == "" {
		return routeUnmatched
	}
	return fullPath
}

// accessLog writes one line per request after the handler: 5xx at error
// (503 at warn: the data is missing, the edge is fine), 4xx at debug (a
// client's mistake, or a scan), and one success in
// Config.AccessLogSample at info. Lines of one route and status are
// capped at Config.AccessLogRate a second (see logLimiter), so that no
// client can flood the log; the metrics count every request.
func (s *Server) accessLog() gin.HandlerFunc {
	every := uint64(s.cfg.AccessLogSample)
	var n atomic.Uint64
	ids := newRequestIDs()
	return func(c *gin.Context) {
		start := requestStart(c.Request)
		c.Next()
		status := c.Writer.Status()
		if status < 400 && (every == 0 || n.Add(1)%every != 0) {
			return
		}
		level := slog.LevelInfo
		switch {
		case status == http.StatusServiceUnavailable:
			level = slog.LevelWarn
		case status >= 500:
			level = slog.LevelError
		case status >= 400:
			level = slog.LevelDebug
		}
		ctx := c.Request.Context()
		if !s.log.Enabled(ctx, level) {
			return
		}
		route := routeLabel(c.FullPath())
		ok, suppressed := s.logLimit.allow(route, status)
		if !ok {
			return
		}
		path := c.Request.URL.Path
		if len(path) > 200 {
			path = path[:200]
		}
		attrs := []slog.Attr{
			slog.String("method", c.Request.Method),
			slog.String("route", route),
			slog.String("path", path),
			slog.Int("status", status),
			// duration_ms: milliseconds, to the microsecond, a number
			// with its unit in its name (slog.Duration writes bare
			// nanoseconds in JSON).
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			slog.String("request_id", requestIDOf(c, ids)),
			slog.Bool("sampled", status < 400),
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int("suppressed", suppressed))
		}
		s.log.LogAttrs(ctx, level, "request", attrs...)
	}
}

// observe records the request metrics.
func (s *Server) observe() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := requestStart(c.Request)
		c.Next()
		route := c.FullPath()
		if route == "" && c.Writer.Status() == http.StatusMethodNotAllowed {
			// A wrong method on a real route: label it with that route, so
			// 405s are not mistaken for unknown paths. The label set stays
			// bounded: observe keeps only routes it knows.
			route = c.Request.URL.Path
		}
		s.metrics.observe(route, c.Request.Method, c.Writer.Status(), c.Writer.Size(), time.Since(start))
	}
}

// cors allows every origin, without credentials, on every response.
func (s *Server) cors() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h["Access-Control-Allow-Origin"] = hdrAllowOrigin
		h["Access-Control-Expose-Headers"] = hdrExposeHeaders
		c.Next()
	}
}

func securityHeaders(c *gin.Context) {
	c.Writer.Header()["X-Content-Type-Options"] = hdrNoSniff
	c.Next()
}

// serveHealth answers /api/health: liveness and versions, computed per
// request by appending the uptime to a prefix encoded once (no encoder on
// the request path).
func (s *Server) serveHealth(c *gin.Context) {
	body := make([]byte, 0, len(s.healthPrefix)+24)
	body = append(body, s.healthPrefix...)
	body = strconv.AppendInt(body, int64(s.now().Sub(s.started)/time.Second), 10)
	body = append(body, '}')
	writeResponse(answer.NewOK(answer.ContentJSON, answer.NoStore, body, answer.DataInfo{}), c.Writer, c.Request)
}

// healthPrefix is the /api/health body up to the uptime value.
func healthPrefix() []byte {
	build, _ := json.Marshal(struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}{buildinfo.Version, buildinfo.Commit})
	// version is the deprecated name of api_version (removed in 3.0).
	return []byte(`{"status":"ok","api_version":"` + view.APIVersion + `","version":"` + view.APIVersion +
		`","portal_version":` + strconv.Itoa(view.PortalVersion) +
		`,"build":` + string(build) + `,"uptime_seconds":`)
}
