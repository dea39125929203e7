package process

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/ops"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

func TestSetupNamesWhatIsMissing(t *testing.T) {
	if _, err := Setup("market", io.Discard); err == nil || !strings.Contains(err.Error(), "TOKEN_CONFIG") {
		t.Errorf("without a token: %v", err)
	}
	t.Setenv("TOKEN_MINT", config.DemoMint)
	t.Setenv("TOKEN_MAX_SUPPLY", config.DemoMaxSupply)
	if _, err := Setup("market", io.Discard); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("without Redis: %v", err)
	}
	t.Setenv("REDIS_URL", "redis://:hunter2@[bad")
	if _, err := Setup("market", io.Discard); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad Redis URL: %v", err)
	}
}

func TestSetupAndServe(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("TOKEN_MINT", config.DemoMint)
	t.Setenv("TOKEN_MAX_SUPPLY", config.DemoMaxSupply)
	t.Setenv("REDIS_URL", srv.URL())
	t.Setenv("DRAIN_DELAY", "300ms")
	p, err := Setup("market", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Store.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvOps := OpsServer(p.Common, ops.NewRegistry("t"), nil, l, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srvOps.Run(ctx) }()
	readyz := func() int {
		resp, err := http.Get("http://" + l.Addr().String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if c := readyz(); c != 200 {
		t.Fatalf("readyz = %d", c)
	}
	cancel()
	time.Sleep(50 * time.Millisecond)
	if c := readyz(); c != 503 {
		t.Errorf("readyz while draining = %d, want 503", c)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSetupRefusesRedisCredentials: a Redis that refuses the credentials
// of REDIS_URL stops the start with that reason (not "unreachable"), and
// never with the password in the text.
func TestSetupRefusesRedisCredentials(t *testing.T) {
	srv := redistest.StartWithPassword(t, "right-horse-battery")
	t.Setenv("TOKEN_MINT", config.DemoMint)
	t.Setenv("TOKEN_MAX_SUPPLY", config.DemoMaxSupply)
	for name, url := range map[string]string{
		"wrong password": "redis://:wrong-staple@" + srv.Addr(),
		"no password":    "redis://" + srv.Addr(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("REDIS_URL", url)
			p, err := Setup("market", io.Discard)
			if err == nil {
				p.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), "REDIS_URL: authentication failed (wrong password?)") || strings.Contains(err.Error(), "staple") {
				t.Errorf("error %q", err)
			}
		})
	}
	t.Setenv("REDIS_URL", srv.URL())
	p, err := Setup("market", io.Discard)
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	p.Close()
	// REDIS_PASSWORD wins over the URL's password.
	t.Setenv("REDIS_URL", "redis://:wrong-staple@"+srv.Addr())
	t.Setenv("REDIS_PASSWORD", "wrong-staple-too")
	if p, err := Setup("market", io.Discard); err == nil {
		p.Close()
		t.Error("a wrong REDIS_PASSWORD was not used")
	}
}

// TestRedisPasswordApart: REDIS_PASSWORD carries a password with every
// character URL syntax reserves, unescaped, as the Helm chart passes it
// from a Secret; the same characters pasted into REDIS_URL break the URL.
func TestRedisPasswordApart(t *testing.T) {
	const password = "p/a#s?s%w@o:r d&=+;$!*'()[],~`\\\"^{}|<>"
	srv := redistest.StartWithPassword(t, password)
	t.Setenv("TOKEN_MINT", config.DemoMint)
	t.Setenv("TOKEN_MAX_SUPPLY", config.DemoMaxSupply)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr()+"/0")
	t.Setenv("REDIS_PASSWORD", password)
	p, err := Setup("market", io.Discard)
	if err != nil {
		t.Fatalf("REDIS_PASSWORD with special characters: %v", err)
	}
	if err := p.Store.Ping(context.Background()); err != nil {
		t.Errorf("ping: %v", err)
	}
	p.Close()
	if err := os.Unsetenv("REDIS_PASSWORD"); err != nil { // t.Setenv restores it
		t.Fatal(err)
	}
	t.Setenv("REDIS_URL", "redis://:"+password+"@"+srv.Addr()+"/0")
	if p, err := Setup("market", io.Discard); err == nil {
		p.Close()
		t.Error("the password pasted unescaped into REDIS_URL worked: the test's premise is wrong")
	}
}

// TestOpsServerLimits: the ops listener has timeouts, serves pprof only
// with OPS_PPROF, and refuses a profile or trace longer than a minute.
func TestOpsServerLimits(t *testing.T) {
	for _, on := range []bool{false, true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := OpsServer(config.Common{OpsPprof: on, DrainDelay: 0, ShutdownTimeout: time.Second}, ops.NewRegistry("t"), nil, l, nil)
		if s.Srv.ReadHeaderTimeout <= 0 || s.Srv.ReadTimeout <= 0 || s.Srv.WriteTimeout != OpsWriteTimeout ||
			s.Srv.IdleTimeout <= 0 || s.Srv.MaxHeaderBytes <= 0 {
			t.Errorf("ops server limits: %+v", s.Srv)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		status := func(path string) int {
			resp, err := http.Get("http://" + l.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		want, wantLong := http.StatusNotFound, http.StatusNotFound
		if on {
			want, wantLong = http.StatusOK, http.StatusBadRequest
		}
		if got := status("/debug/pprof/"); got != want {
			t.Errorf("OPS_PPROF=%v: /debug/pprof/ = %d, want %d", on, got, want)
		}
		for _, p := range []string{"/debug/pprof/profile?seconds=3600", "/debug/pprof/trace?seconds=61", "/debug/pprof/heap?seconds=1e9"} {
			if got := status(p); got != wantLong {
				t.Errorf("OPS_PPROF=%v: %s = %d, want %d", on, p, got, wantLong)
			}
		}
		http.DefaultClient.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenStoreAppliesHistoryRetention(t *testing.T) {
	t.Setenv("HISTORY_RAW_RETENTION", "5h")
	t.Setenv("HISTORY_1H_RETENTION", "2000h")
	c, err := config.LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	st, backend, err := OpenStore(c, config.DemoMint)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if r := st.Retention(); backend != "memory" || r.Raw != 5*time.Hour || r.FiveMin != 720*time.Hour || r.Hour != 2000*time.Hour {
		t.Errorf("%s store retention = %+v", backend, r)
	}
}
