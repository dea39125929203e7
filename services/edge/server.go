// Package edge is the public API of tokendata: every endpoint of the README's
// Endpoints section, served by Gin from a snapshot of the store held in memory.
//
// The edge is three rooms, and this package wires them:
//   - services/edge/mirror reads the four documents and the collectors'
//     status records when a collector announces an update and on a short
//     poll, and the history; it hands each new state to the view and
//     publishes the rendered view through one atomic pointer;
//   - services/edge/view renders every endpoint's body, headers and ETag
//     once per change;
//   - services/edge/serve answers requests from the current view: it copies
//     precomputed headers and writes precomputed bytes.
//
// The request path does no store I/O and no JSON encoding. /api/health and
// /api/status are the exceptions: they are computed per request
// (no-store), from the snapshot and the last store check, never from the
// store itself.
package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/events"
	"github.com/tokendata/tokendata/services/edge/mirror"
	"github.com/tokendata/tokendata/services/edge/serve"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/lifecycle"
)

// Server is the edge: the mirror of the store and the public HTTP server
// that serves its views.
type Server struct {
	common config.Common
	cfg    Config
	log    *slog.Logger
	// capLog is the start log line's attributes of the connection cap.
	capLog []any
	// signLog is the start log line of the signing key.
	signLog []any
	view.Redactor

	// bodies renders the views (the mirror's render inputs).
	bodies *view.RenderInputs
	mirror *mirror.Mirror
	serve  *serve.Server

	// hub is the stream of changes (feed.go); published wakes its
	// feed, lastVerdict is the status verdict it offered last.
	hub         *events.Hub
	published   chan struct{}
	lastVerdict *string
	now         func() time.Time
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
	s := &Server{common: common, cfg: cfg, log: deps.Log, capLog: capLog, Redactor: view.NewRedactor(common, token)}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	openapi, err := openAPIJSON()
	if err != nil {
		return nil, fmt.Errorf("edge: embedded OpenAPI document: %w", err)
	}
	errInternal := answer.NewError(http.StatusInternalServerError, answer.CodeInternal, "Internal error; it has been logged.", cfg.RetryAfter)
	timings := common.Timings()
	s.bodies = &view.RenderInputs{Token: token, RetryAfter: cfg.RetryAfter, Timings: timings, Redactor: s.Redactor, Log: s.log,
		OpenAPI: openapi, ErrInternal: errInternal, Demo: deps.Demo, Portal: cfg.PortalOn(), CSP: view.PortalCSP(token.Logo),
		CacheControls: map[answer.Group]string{answer.GroupNone: answer.NoStore, answer.GroupMarket: cfg.CacheControlMarket,
			answer.GroupSupply: cfg.CacheControlSupply, answer.GroupHolders: cfg.CacheControlHolders, answer.GroupStatic: cfg.CacheControlStatic}}
	if err := s.sign(token, deps); err != nil {
		return nil, err
	}
	if cfg.PortalOn() {
		if s.bodies.Assets, err = view.LoadPortalAssets(); err != nil {
			return nil, fmt.Errorf("edge: embedded portal assets: %w", err)
		}
	}
	s.now = now
	s.published = make(chan struct{}, 1)
	s.hub = events.New(events.Options{Buffer: cfg.EventBuffer, Now: now})
	s.mirror = mirror.New(mirror.Options{OnPublish: s.viewPublished, Store: deps.Store, MaxDocumentBytes: cfg.MaxDocumentBytes,
		StoreTimeout: cfg.StoreTimeout, SnapshotPoll: cfg.SnapshotPoll, ReadyGrace: cfg.ReadyGrace,
		Log: s.log, Now: now, Timings: timings, Redactor: s.Redactor, Inputs: s.bodies, Registry: reg})
	s.serve = serve.New(serve.Options{Source: s.mirror, Addr: common.HTTPAddr,
		ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
		MaxHeaderBytes: cfg.MaxHeaderBytes, MaxConnections: cfg.MaxConnections, CORSMaxAge: cfg.CORSMaxAge,
		RetryAfter: cfg.RetryAfter, AccessLogSample: cfg.AccessLogSample, AccessLogRate: cfg.AccessLogRate,
		DrainDelay: common.DrainDelay, DrainMax: common.DrainMax, ShutdownTimeout: common.ShutdownTimeout,
		Assets: s.bodies.Assets, ErrInternal: errInternal, Log: s.log, Now: now, Registry: reg,
		Events: serve.EventOptions{Hub: s.hub, MaxStreams: cfg.MaxEventStreams, Heartbeat: cfg.EventHeartbeat,
			MaxAge: cfg.EventMaxAge, WriteTimeout: cfg.EventWriteTimeout, MaxPending: cfg.EventMaxPending, Retry: cfg.EventRetry}})
	return s, nil
}

// Handler is the public Gin engine.
func (s *Server) Handler() http.Handler { return s.serve.Handler() }

// Ready reports whether the edge should receive traffic: it is not
// draining; it has read the store once; it holds every domain, or
// EDGE_READY_GRACE has passed since that first read; and either the store
// answers or it has data to serve (mirror.Mirror.Ready).
func (s *Server) Ready() bool { return s.serve.Ready() }

// Refresh reads the store once, every document fetched again, and
// publishes a new view when anything changed. A failed read keeps the
// current snapshot.
func (s *Server) Refresh(ctx context.Context) { s.mirror.Refresh(ctx) }

// Refresher keeps the snapshot current until ctx is done (RunOn runs it).
func (s *Server) Refresher(ctx context.Context) error { return s.mirror.Refresher(ctx) }

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
	s.log.Info("answer signatures", s.signLog...)
	return lifecycle.Run(ctx, s.mirror.Refresher, s.eventFeed, s.apiServer(l).Run)
}

// apiServer is the one public HTTP server of the edge (serve.Server.APIServer).
func (s *Server) apiServer(l net.Listener) *lifecycle.Server { return s.serve.APIServer(l) }
