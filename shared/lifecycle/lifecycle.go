// Package lifecycle runs a process's actors (servers, collector loops)
// until a signal or the first failure, then stops them in order: readiness
// off, a drain delay, graceful shutdown with a timeout.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// Actor runs until ctx is done and returns nil then, or an error early.
type Actor func(ctx context.Context) error

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// Run runs every actor in an errgroup: the first error cancels the others;
// cancelling ctx stops them all. It returns the first error, if any.
func Run(ctx context.Context, actors ...Actor) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, a := range actors {
		g.Go(func() error { return a(ctx) })
	}
	return g.Wait()
}

// Server is an HTTP server actor with a graceful stop: when ctx is done,
// BeforeDrain (readiness off), then Drain, then Shutdown within Timeout.
//
// During the drain every answer carries Connection: close and its
// connection is closed once the answer is out. A load balancer stops
// opening connections to a replica that is not ready, but clients keep
// sending on the keep-alive connections they hold; this way each of them
// gets a whole answer and moves on, before Shutdown closes what is left
// idle. (Turning keep-alives off with SetKeepAlivesEnabled instead would
// close the idle connections at once, under a request a client may be
// sending at that moment: a reset it cannot tell from a crash.)
type Server struct {
	Name string
	// Srv is the server; Addr is its listen address.
	Srv *http.Server
	// Listener, when set, is used instead of listening on Srv.Addr.
	Listener net.Listener
	// BeforeDrain runs first when the stop begins (e.g. readiness off);
	// with StayReady, when the drain ends, just before Shutdown.
	BeforeDrain func()
	// Drain is the delay between readiness off and Shutdown: the least
	// the drain lasts.
	Drain time.Duration
	// StayReady keeps readiness on during the drain (BeforeDrain runs at
	// its end). Kubernetes takes a stopping pod out of its Services'
	// ready endpoints by itself, and sends to it only while no other pod
	// is ready, provided it still reports ready (an endpoint that is
	// terminating and serving): a pod that turned not-ready at once would
	// leave such a Service with no endpoint at all.
	StayReady bool
	// Linger, when above Drain, lets the drain go on past Drain while
	// requests still arrive (one within Quiet: the replica is still some
	// client's route), Linger in all at most.
	Linger time.Duration
	// Quiet is how long a lingering drain waits for the next request
	// (0: LingerQuiet).
	Quiet time.Duration
	// Hold, when set, keeps the drain going until it is closed (the ops
	// listener stays up for as long as the other servers serve).
	Hold <-chan struct{}
	// Timeout bounds Shutdown.
	Timeout time.Duration
	Log     *slog.Logger
}

// LingerQuiet is how long a lingering drain waits for the next request
// before it ends: the replica is no longer anyone's route.
const LingerQuiet = time.Second

const lingerPoll = 50 * time.Millisecond

// RunWithOps is Run with an ops listener (probes, metrics) that stays up
// until every other actor has returned: its drain is held until then, so
// that its probes answer for as long as the other servers serve.
func RunWithOps(ctx context.Context, ops *Server, actors ...Actor) error {
	others := make(chan struct{})
	ops.Hold = others
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Run(ctx) })
	g.Go(func() error {
		defer close(others)
		return Run(ctx, actors...)
	})
	return g.Wait()
}

// Run serves until ctx is done, then drains and shuts down.
func (s *Server) Run(ctx context.Context) error {
	l := s.Listener
	if l == nil {
		var err error
		l, err = net.Listen("tcp", s.Srv.Addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", s.Name, err)
		}
	}
	if s.Log != nil {
		s.Log.Info("listening", "server", s.Name, "addr", l.Addr().String())
	}
	var draining atomic.Bool
	var last atomic.Int64 // the start of the last request of the drain
	h := s.Srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	s.Srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			last.Store(time.Now().UnixNano())
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
	errc := make(chan error, 1)
	go func() { errc <- s.Srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s server: %w", s.Name, err)
	case <-ctx.Done():
	}
	began := time.Now()
	draining.Store(true)
	if s.BeforeDrain != nil && !s.StayReady {
		s.BeforeDrain()
	}
	if s.Drain > 0 {
		time.Sleep(s.Drain)
	}
	quiet := s.Quiet
	if quiet <= 0 {
		quiet = LingerQuiet
	}
	for s.Linger > s.Drain && time.Since(began) < s.Linger &&
		time.Since(time.Unix(0, last.Load())) < quiet {
		time.Sleep(min(lingerPoll, s.Linger-time.Since(began)))
	}
	if s.Hold != nil {
		<-s.Hold
	}
	if s.BeforeDrain != nil && s.StayReady {
		s.BeforeDrain()
	}
	if s.Log != nil && s.Linger > s.Drain {
		s.Log.Info("drained", "server", s.Name, "after", time.Since(began).Round(time.Millisecond).String())
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := s.Srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("%s shutdown: %w", s.Name, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s server: %w", s.Name, err)
	}
	if s.Log != nil {
		s.Log.Info("stopped", "server", s.Name)
	}
	return nil
}
