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
	// BeforeDrain runs first when the stop begins (e.g. readiness off).
	BeforeDrain func()
	// Drain is the delay between readiness off and Shutdown.
	Drain time.Duration
	// Timeout bounds Shutdown.
	Timeout time.Duration
	Log     *slog.Logger
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
	h := s.Srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	s.Srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
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
	draining.Store(true)
	if s.BeforeDrain != nil {
		s.BeforeDrain()
	}
	if s.Drain > 0 {
		time.Sleep(s.Drain)
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
