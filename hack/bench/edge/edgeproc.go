package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // BENCH_EDGE_PPROF
	"os"

	"github.com/caarlos0/env/v11"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/httpsig"
	"github.com/tokendata/tokendata/shared/lifecycle"
	"github.com/tokendata/tokendata/shared/logging"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/store"
)

// waitSigned waits for a 200 of url that carries a signature: the signed
// row would compare nothing if the edge served unsigned answers.
func waitSigned(url string) error {
	if err := waitHTTP(url); err != nil {
		return err
	}
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.Header.Get("Signature") == "" || resp.Header.Get("Content-Digest") == "" {
		return fmt.Errorf("%s: the signed edge answers without Signature or Content-Digest", url)
	}
	return nil
}

// serveEdge runs the edge as cmd/edge does, on the given Redis; signed,
// with a signing key generated for the run. Its EDGE_ settings are read
// from the environment as cmd/edge reads them (the defaults when unset:
// make bench sets none; make bench-events raises the connection and
// stream caps).
func serveEdge(addr, redisURL string, signed bool) error {
	cfg, err := edge.LoadConfig()
	if err != nil {
		return err
	}
	var common config.Common
	if err := env.ParseWithOptions(&common, env.Options{Environment: map[string]string{"REDIS_URL": redisURL, "HTTP_ADDR": addr}}); err != nil {
		return err
	}
	common.DrainDelay = 0
	if err := boundaryTimings(&common); err != nil {
		return err
	}
	opts, err := store.ParseRedisURL(redisURL)
	if err != nil {
		return err
	}
	token := edgetest.Token()
	st := store.New(store.NewRedis(opts), token.Mint)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	log := logging.New(devnull, "edge", slog.LevelInfo)
	reg := ops.NewRegistry("edge")
	deps := edge.Deps{Store: st, Registry: reg, Log: log}
	if signed {
		if deps.SigningKey, err = httpsig.GenerateKey(); err != nil {
			return err
		}
	}
	srv, err := edge.New(common, token, cfg, deps)
	if err != nil {
		return err
	}
	if a := os.Getenv("BENCH_EDGE_PPROF"); a != "" {
		// Profiling the edge under wrk: BENCH_EDGE_PPROF=127.0.0.1:6060
		// serves /debug/pprof/ of the edge process there, and its
		// /metrics (the ops port's, which this process does not open).
		http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		go func() { _ = http.ListenAndServe(a, nil) }() //nolint:gosec // loopback, for profiling runs only
	}
	ctx, stop := lifecycle.SignalContext(context.Background())
	defer stop()
	return srv.Run(ctx)
}
