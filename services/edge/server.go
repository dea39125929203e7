// Package edge is the public API of tokendata: every endpoint of the README's
// Endpoints section, served by Gin from a snapshot of the store held in memory.
//
// The request path does no store I/O and no JSON encoding: a refresher
// reads the four documents and the collectors' status records when a
// collector announces an update and on a short poll, renders every
// endpoint's body, headers and ETag once per change, and publishes them
// through one atomic pointer. Requests copy precomputed headers and write
// precomputed bytes. /api/health and /api/status are the exceptions: they
// are computed per request (no-store), from the snapshot and the last
// store check, never from the store itself.
package edge

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/store"
)

// Server is the edge: snapshot refresher and public HTTP server.
type Server struct {
	common  config.Common
	token   config.Token
	cfg     Config
	store   *store.Store
	reader  *store.Reader
	log     *slog.Logger
	demo    bool
	now     func() time.Time
	started time.Time
	timings map[contract.Domain]contract.Timing
	backend string // "redis" or "memory"
	// capLog is the start log line's attributes of the connection cap.
	capLog []any
	view.Redactor

	// bodies renders the views; it holds what rendering needs, not the
	// server.
	bodies  *view.RenderInputs
	metrics *metrics
	engine  *gin.Engine
	// healthPrefix is /api/health's body up to the uptime.
	healthPrefix []byte

	view atomic.Pointer[view.View]
	// ahead is the view rendered for the current one's next boundary
	// (ahead.go).
	ahead  aheadState
	health atomic.Pointer[view.StoreHealth]
	// statuses are the collectors' status records of the last read.
	statuses atomic.Pointer[map[string]contract.Status]
	// loaded is set after the first successful read of the store, and
	// firstRead (Unix nanoseconds) is when it happened.
	loaded    atomic.Bool
	firstRead atomic.Int64
	// warm is set once the edge has held every domain, or EDGE_READY_GRACE
	// has passed since the first read: the start-up wait is over for good.
	warm     atomic.Bool
	draining atomic.Bool

	readMu    sync.Mutex // one store read of a refresh at a time
	refreshMu sync.Mutex // one merge and render of a view at a time
	// histMu orders history reads: the first one (in the first refresh)
	// and the later ones (in the refresh, or the refresher's history
	// goroutine). histReads is when each domain's history was last read.
	histMu    sync.Mutex
	histReads historyReads
	// histWake, while the refresher's history goroutine runs, takes the
	// refreshes' requests for a history read in its place.
	histWake  chan struct{}
	histAsync atomic.Bool

	// logLimit caps the access log's lines per route and status.
	logLimit *logLimiter
	// conns counts and caps the public listener's connections.
	conns *conns

	// precomputed answers that do not depend on the data
	errNotFound, errMethod, errInternal, errBody *answer.Answer
}

// New builds the edge for token over deps.Store. It does not touch the
// store: Run does.
func New(common config.Common, token config.Token, cfg Config, deps Deps) (*Server, error) {
	if deps.Store == nil {
		return nil, errors.New("edge: Deps.Store is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := token.Validate(); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	capLog, err := resolveConnCap(&cfg)
	if err != nil {
		return nil, err
	}
	if token.Mint != deps.Store.Mint() {
		return nil, fmt.Errorf("token mint %s differs from the store's mint %s", token.Mint, deps.Store.Mint())
	}
	s := &Server{common: common, token: token, cfg: cfg, store: deps.Store, reader: deps.Store.NewReader(cfg.MaxDocumentBytes),
		log: deps.Log, demo: deps.Demo,
		now: deps.Now, timings: common.Timings(), backend: "redis", Redactor: view.NewRedactor(common, token),
		histReads: historyReads{}, histWake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if _, ok := deps.Store.Backend().(*store.Memory); ok {
		s.backend = "memory"
	}
	s.started = s.now()
	s.capLog = capLog
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	openapi, err := openAPIJSON()
	if err != nil {
		return nil, fmt.Errorf("edge: embedded OpenAPI document: %w", err)
	}
	s.healthPrefix = healthPrefix()
	s.errNotFound = answer.NewError(http.StatusNotFound, answer.CodeNotFound, "No such endpoint; see /api/openapi.json for the list.", cfg.RetryAfter)
	s.errMethod = answer.NewError(http.StatusMethodNotAllowed, answer.CodeMethodNotAllowed, "Only GET, HEAD and OPTIONS are allowed.", cfg.RetryAfter)
	s.errInternal = answer.NewError(http.StatusInternalServerError, answer.CodeInternal, "Internal error; it has been logged.", cfg.RetryAfter)
	s.errBody = answer.NewError(http.StatusRequestEntityTooLarge, answer.CodeContentTooLarge, "Requests to this API carry no body.", cfg.RetryAfter)
	s.bodies = &view.RenderInputs{Token: token, RetryAfter: cfg.RetryAfter, Timings: s.timings, Redactor: s.Redactor, Log: s.log,
		OpenAPI: openapi, ErrInternal: s.errInternal, Demo: deps.Demo, Portal: cfg.PortalOn(), CSP: view.PortalCSP(token.Logo),
		CacheControls: map[answer.Group]string{answer.GroupNone: answer.NoStore, answer.GroupMarket: cfg.CacheControlMarket,
			answer.GroupSupply: cfg.CacheControlSupply, answer.GroupHolders: cfg.CacheControlHolders, answer.GroupStatic: cfg.CacheControlStatic}}
	if cfg.PortalOn() {
		if s.bodies.Assets, err = view.LoadPortalAssets(); err != nil {
			return nil, fmt.Errorf("edge: embedded portal assets: %w", err)
		}
	}
	s.metrics = newMetrics(reg, routePaths(s.bodies.Assets), s)
	s.logLimit = newLogLimiter(cfg.AccessLogRate, s.now, s.metrics.logSuppressed.Inc)
	refusal := serialize(answer.NewError(http.StatusServiceUnavailable, answer.CodeTooManyConnections,
		"The server has too many open connections; retry later.", cfg.RetryAfter), closeHeaders)
	s.conns = newConns(cfg.MaxConnections, refusal, s.refusedConn,
		&rawAnswers{maxHeaderBytes: cfg.MaxHeaderBytes, retryAfter: cfg.RetryAfter, counted: s.metrics.rejected})
	s.health.Store(&view.StoreHealth{Err: "not checked yet"})
	s.view.Store(s.render(&view.State{Docs: map[contract.Domain]*view.Doc{}, Rejected: map[contract.Domain]string{}}, s.now()))
	s.engine = s.newEngine()
	return s, nil
}

// Handler is the public Gin engine.
func (s *Server) Handler() http.Handler { return s.engine }

// Ready reports whether the edge should receive traffic: it is not
// draining; it has read the store once; it holds every domain, or
// EDGE_READY_GRACE has passed since that first read; and either the store
// answers or it has data to serve.
//
// The grace is for a replica started while Redis is empty (restarted
// without persistence): the collectors write back their last good
// documents within COLLECTOR_WATCH_INTERVAL, and until then the replicas
// already running serve their copies, so the new one waits rather than
// answer 503 where they answer 200. On a fresh install nothing comes in
// time, and the edge turns ready after the grace to answer 503 honestly.
// Once over, the wait never comes back: a running edge that loses a
// domain stays ready.
func (s *Server) Ready() bool {
	if s.draining.Load() || !s.loaded.Load() {
		return false
	}
	docs := s.view.Load().State.Docs
	if !s.warm.Load() {
		all := len(docs) == len(contract.Domains)
		if !all && s.now().Sub(time.Unix(0, s.firstRead.Load())) < s.cfg.ReadyGrace {
			return false
		}
		if s.warm.CompareAndSwap(false, true) && !all {
			s.log.Info("ready without every domain: EDGE_READY_GRACE has passed since the first read of the store",
				"domains_held", len(docs), "grace", s.cfg.ReadyGrace.String())
		}
	}
	if h := s.health.Load(); h != nil && h.OK {
		return true
	}
	return len(docs) > 0
}

// Run refreshes the snapshot and serves the public API on
// common.HTTPAddr until ctx is done, then drains and shuts down.
func (s *Server) Run(ctx context.Context) error { return s.RunOn(ctx, nil) }

// RunOn is Run on a listener the caller opened (standalone, tests); nil
// listens on common.HTTPAddr.
func (s *Server) RunOn(ctx context.Context, l net.Listener) error {
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", s.common.HTTPAddr); err != nil {
			return fmt.Errorf("api listener: %w", err)
		}
	}
	s.log.Info("connection cap", s.capLog...)
	return lifecycle.Run(ctx, s.Refresher, s.apiServer(l).Run)
}

// apiServer is the one public HTTP server of the edge, whoever runs it
// (the edge binary, standalone): its limits, its listener that counts and
// caps connections, and readiness off before the drain.
//
// ReadTimeout is the header timeout too: requests carry no body (see
// refuseBody). Neither deadline costs anything per request: net/http sets
// the read deadline twice per request whatever the settings; WriteTimeout
// adds one deadline update per answer, which make bench does not tell from
// noise. OPTIONS * reaches the router (DisableGeneralOptionsHandler), so
// that it gets the contract's headers.
func (s *Server) apiServer(l net.Listener) *lifecycle.Server {
	srv := &http.Server{
		Addr:                         s.common.HTTPAddr,
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
	return &lifecycle.Server{
		Name:        "api",
		Listener:    s.conns.wrap(l),
		Srv:         srv,
		BeforeDrain: func() { s.draining.Store(true) },
		Drain:       s.common.DrainDelay,
		Timeout:     s.common.ShutdownTimeout,
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

// Refresh reads the store once, every document fetched again, and
// publishes a new view when anything changed. A failed read keeps the
// current snapshot.
func (s *Server) Refresh(ctx context.Context) { s.refresh(ctx, contract.Domains...) }

// refresh is Refresh fetching only the fetch domains and the documents
// whose size or expiry moved (store.Reader); a value above
// EDGE_MAX_DOCUMENT_BYTES is refused unread.
func (s *Server) refresh(ctx context.Context, fetch ...contract.Domain) {
	// The store read holds readMu only: a request at a boundary (current)
	// waits for a render at most, never for the store.
	s.readMu.Lock()
	defer s.readMu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	// A remaining TTL counts from some instant of the read: counted from
	// its start, a copy never outlives the key.
	sent := s.now()
	snap, err := s.reader.Read(rctx, fetch...)
	docs, errs, statuses := snap.Docs, snap.Errs, snap.Statuses
	now := s.now()
	prevHealth := s.health.Load()
	if err != nil {
		s.metrics.refreshes.WithLabelValues("error").Inc()
		s.metrics.storeErrs.Inc()
		why := "store unreachable or timed out"
		if store.IsAuthError(err) {
			why = "REDIS_URL: authentication failed (wrong password?)"
		}
		h := &view.StoreHealth{OK: false, CheckedAt: now, LastOK: prevHealth.LastOK, Err: why}
		s.health.Store(h)
		if prevHealth.OK || prevHealth.CheckedAt.IsZero() {
			s.log.Warn("store read failed; serving the last snapshot", "error", s.Redact(err.Error()))
		}
		s.refreshMu.Lock()
		s.rerenderLocked(now, false)
		s.refreshMu.Unlock()
		return
	}
	s.metrics.refreshes.WithLabelValues("ok").Inc()
	s.statuses.Store(&statuses)
	if !prevHealth.OK && !prevHealth.CheckedAt.IsZero() {
		s.log.Info("store reachable again")
	}
	s.health.Store(&view.StoreHealth{OK: true, CheckedAt: now, LastOK: now})
	read := make(map[contract.Domain]view.ReadDoc, len(docs))
	for d, doc := range docs {
		rd := view.ReadDoc{Env: doc.Envelope}
		if doc.TTL > 0 {
			rd.Expires = sent.Add(doc.TTL.Round(time.Millisecond)) // Redis counts in ms
		}
		read[d] = rd
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	cur := s.view.Load()
	next, problems := view.Merge(cur.State, read, errs, statuses, now)
	for _, p := range problems {
		s.log.Warn("stored document refused; keeping the previous one", "problem", s.Redact(p))
	}
	async := s.histAsync.Load()
	if !s.loaded.Load() && !async {
		// the first view of a start carries the history: no history body
		// answers empty for want of a read (a first read that comes
		// later, the store having been down at the start, leaves it to
		// the history goroutine: until it has read, the history answers
		// 503 data_unavailable, and the data waits for nothing)
		s.histMu.Lock()
		if hist, changed := s.readHistory(ctx, cur.State, next, now); changed {
			next.Hist = hist
		}
		s.histMu.Unlock()
	}
	s.firstRead.CompareAndSwap(0, now.UnixNano())
	wasLoaded := s.loaded.Swap(true)
	if !sameState(cur.State, next) || (!cur.NextChange.IsZero() && !now.Before(cur.NextChange)) {
		s.publish(next, now)
	}
	// The documents first, then their history: reading up to 15 series
	// never holds back a new price or supply. Under the refresher, its
	// history goroutine reads them, so that the next refresh and the
	// boundaries do not wait either.
	if async {
		select {
		case s.histWake <- struct{}{}:
		default: // a read is already asked for
		}
		return
	}
	if wasLoaded {
		s.updateHistoryLocked(ctx)
	}
}

// current is the view to serve now: the published one, re-rendered first
// when a domain crossed its stale-after or TTL since and the refresher has
// not done it yet (its timer late on a busy machine), so that no answer
// outlives its data's TTL or misses its stale flag because a goroutine
// was not scheduled. It waits for a render under way at most (never for
// a store read): the first request past the boundary renders, the others
// find the new view.
func (s *Server) current() *view.View {
	if s.advance(s.now()) {
		return s.view.Load()
	}
	s.refreshMu.Lock()
	s.rerenderLocked(s.now(), false)
	s.refreshMu.Unlock()
	return s.view.Load()
}

// rerender re-renders the current state when a domain crossed a boundary.
func (s *Server) rerender() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.rerenderLocked(s.now(), true)
}

func (s *Server) rerenderLocked(now time.Time, force bool) {
	cur := s.view.Load()
	if !force && (cur.NextChange.IsZero() || now.Before(cur.NextChange)) {
		return
	}
	if !force && s.advance(now) {
		return // the view rendered ahead is in
	}
	if !cur.NextChange.IsZero() && !now.Before(cur.NextChange) {
		s.metrics.boundaries.WithLabelValues(boundaryRendered).Inc()
	}
	s.publish(view.Expire(cur.State, now), now)
}

// render renders st at now, after the current view.
//
// Its duration is the lead of the next render ahead (ahead.go): a view is
// rendered ahead early enough for a render as long as the last one.
func (s *Server) render(st *view.State, now time.Time) *view.View {
	start := time.Now()
	v := s.bodies.Render(st, s.view.Load(), now)
	s.ahead.lastRender.Store(int64(time.Since(start)))
	return v
}

func (s *Server) publish(st *view.State, now time.Time) {
	s.view.Store(s.render(st, now))
	s.metrics.renders.Inc()
}

// sameState reports whether two states render the same bodies at the
// same instant: same history series (read once per change, so compared
// by identity), same documents (by updated_at and bytes), same
// rejections, same run of every domain without a document (it decides
// holders_unavailable, and whether a 503 says "retry later" or the
// remedy of a permanent failure).
func sameState(a, b *view.State) bool {
	if len(a.Docs) != len(b.Docs) || len(a.Rejected) != len(b.Rejected) || len(a.Hist) != len(b.Hist) {
		return false
	}
	for k, x := range a.Hist {
		if b.Hist[k] != x {
			return false
		}
	}
	for d, x := range a.Docs {
		y := b.Docs[d]
		if y == nil || !x.Env.UpdatedAt.Equal(y.Env.UpdatedAt) || string(x.Env.Data) != string(y.Env.Data) ||
			x.Env.Source != y.Env.Source || !x.Expires.Equal(y.Expires) {
			return false
		}
	}
	for d, why := range a.Rejected {
		if b.Rejected[d] != why {
			return false
		}
	}
	for _, d := range contract.Domains {
		if a.Docs[d] != nil {
			continue
		}
		ra := a.Statuses[contract.CollectorOf(d)].Runs[d]
		rb := b.Statuses[contract.CollectorOf(d)].Runs[d]
		if ra.OK != rb.OK || ra.ErrorKind != rb.ErrorKind || ra.Error != rb.Error || ra.Remedy != rb.Remedy {
			return false
		}
	}
	return true
}

// dataAge is the age in seconds of a domain's document, -1 when absent.
func (s *Server) dataAge(d contract.Domain) float64 {
	doc := s.view.Load().State.Docs[d]
	if doc == nil {
		return -1
	}
	return s.now().Sub(doc.Env.UpdatedAt).Seconds()
}

func (s *Server) dataStale(d contract.Domain) float64 {
	doc := s.view.Load().State.Docs[d]
	if doc == nil {
		return -1
	}
	return boolFloat(s.now().Sub(doc.Env.UpdatedAt) > s.timings[d].StaleAfter)
}

func (s *Server) storeUp() bool { return s.health.Load().OK }
