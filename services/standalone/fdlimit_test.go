package standalone_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// fileLimit is the descriptor limit the edge runs under here: as a
// systemd unit or a small container may set it, soft and hard alike.
const fileLimit = 1024

// limited writes a script named name into a new directory that runs the
// binary name of dir under a descriptor limit of fileLimit, and returns
// that directory (for startProc).
func limited(t *testing.T, dir, name string) string {
	t.Helper()
	wrap := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q\n", fileLimit, filepath.Join(dir, name))
	if err := os.WriteFile(filepath.Join(wrap, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrap
}

// TestConnectionCapBelowTheFileLimit: under a descriptor limit of 1,024,
// the edge sizes its connection cap from the limit, so that 3,000 idle
// keep-alive clients cannot take every descriptor: a new client is still
// answered while they stay. (With the cap at 10,000 the process ran out
// of descriptors, accepted nothing, and no one was answered.) A cap
// configured above what the limit allows is refused at start, naming the
// variable.
func TestConnectionCapBelowTheFileLimit(t *testing.T) {
	dir := binaries(t)
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), config.DemoMint)
	defer func() { _ = st.Close() }()
	if err := edgetest.WriteAll(context.Background(), st, time.Now()); err != nil {
		t.Fatal(err)
	}
	wrap := limited(t, dir, "edge")

	t.Run("a configured cap above the limit is refused", func(t *testing.T) {
		p := startProc(t, wrap, "edge", append(tokenEnv(rs.URL()), "HTTP_ADDR="+freeAddr(t), "OPS_ADDR="+freeAddr(t),
			"EDGE_MAX_CONNECTIONS=10000"))
		if !p.wait(30 * time.Second) {
			t.Fatal("the edge did not exit with a cap of 10000 under a limit of 1024")
		}
		out := p.out.String()
		if p.state.ExitCode() == 0 || p.state.ExitCode() == 97 || !strings.Contains(out, "EDGE_MAX_CONNECTIONS: 10000 is above what the file descriptor limit allows") ||
			!strings.Contains(out, "at most 896") {
			t.Fatalf("exit %d, output:\n%s", p.state.ExitCode(), out)
		}
	})

	t.Run("idle clients leave room for a new one", func(t *testing.T) {
		_, api, ops := startEdgeBinary(t, wrap, tokenEnv(rs.URL()))
		addr := strings.TrimPrefix(api, "http://")
		const idle = 3000
		conns := make([]net.Conn, 0, idle)
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range idle {
			wg.Go(func() {
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					return
				}
				// One request with keep-alive, its answer read, then idle.
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := fmt.Fprintf(c, "GET /api/health?i=%d HTTP/1.1\r\nHost: x\r\n\r\n", i); err == nil {
					if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						_ = resp.Body.Close()
					}
				}
				_ = c.SetDeadline(time.Time{})
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			})
		}
		wg.Wait()
		// The flood happened: more clients connected than the file limit
		// (the cap, sized from the limit, keeps descriptors for the new
		// client below; with a cap above the limit, 10,000 say, they would
		// run out and it would never be answered). How the edge shed them
		// (keep-alive off past 90 % of the cap, or 503 at the cap) depends
		// on their pace.
		if len(conns) < 1024 {
			t.Fatalf("only %d of %d idle clients connected: the test did not reach the file limit", len(conns), idle)
		}

		// A new client, while the idle ones stay: answered.
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := client.Get(api + "/api/total-supply")
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer for a new client with %d idle connections held (last: %v)", len(conns), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The cap the edge sized for itself.
		if got := opsMetric(t, ops, "tokendata_edge_connections_max"); got != "896" {
			t.Errorf("tokendata_edge_connections_max = %s, want 896 (1024 less 128 kept)", got)
		}
	})
}

// opsMetric is the value of an unlabelled metric on the ops port.
func opsMetric(t *testing.T, ops, name string) string {
	t.Helper()
	resp, err := probeClient.Get(ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}
