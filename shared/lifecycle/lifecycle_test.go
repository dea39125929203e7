package lifecycle

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServerDrainsThenStops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var notReady atomic.Bool
	s := &Server{
		Name: "test", Listener: l, Drain: 50 * time.Millisecond, Timeout: time.Second,
		Srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}), ReadHeaderTimeout: time.Second},
		BeforeDrain: func() { notReady.Store(true) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, s.Run) }()

	resp, err := http.Get("http://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	cancel()
	time.Sleep(10 * time.Millisecond)
	if !notReady.Load() {
		t.Error("readiness not turned off before the drain")
	}
	// During the drain the server still answers.
	resp, err = http.Get("http://" + l.Addr().String())
	if err != nil {
		t.Fatalf("request during drain: %v", err)
	}
	_ = resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDrainClosesKeepAlivesAfterAnAnswer: a client that goes on sending
// on its keep-alive connection once the drain has begun (as clients behind
// a load balancer do) gets its whole answer, marked Connection: close, and
// then the server closes the connection: the client moves on after an
// answer instead of losing a request to Shutdown closing an idle
// connection under it.
func TestDrainClosesKeepAlivesAfterAnAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var notReady atomic.Bool
	s := &Server{
		Name: "test", Listener: l, Drain: time.Second, Timeout: time.Second,
		Srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}), ReadHeaderTimeout: time.Second},
		BeforeDrain: func() { notReady.Store(true) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, s.Run) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	br := bufio.NewReader(conn)
	get := func() *http.Response {
		t.Helper()
		if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: test\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != "ok" {
			t.Fatalf("body %q, %v", body, err)
		}
		return resp
	}
	if resp := get(); resp.Close {
		t.Fatal("Connection: close before the drain")
	}
	cancel()
	for !notReady.Load() {
		time.Sleep(time.Millisecond)
	}
	resp := get()
	if !resp.Close {
		t.Error("answer during the drain without Connection: close")
	}
	_ = conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond)) // well before the drain ends
	if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("connection not closed after the answer: read %d, %v", n, err)
	}
}

func TestRunStopsOthersOnFirstError(t *testing.T) {
	boom := errors.New("boom")
	err := Run(context.Background(),
		func(context.Context) error { return boom },
		func(ctx context.Context) error { <-ctx.Done(); return nil },
	)
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v", err)
	}
}

// TestLingerServesWhileRequestsArrive: with StayReady and Linger, a
// stopping server that still gets requests (a Service's last replica,
// whose replacement is not ready yet) stays ready and serves them past
// Drain; a second without a request ends the drain; Linger bounds it. Its
// ops listener, held by RunWithOps, answers until the server has stopped.
func TestLingerServesWhileRequestsArrive(t *testing.T) {
	// quiet is well above the test's 200 ms between requests: a request
	// late by a second on a loaded machine does not end the drain.
	const quiet = 3 * time.Second
	newServer := func(t *testing.T, linger time.Duration, notReady *atomic.Bool) (*Server, string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return &Server{
			Name: "api", Listener: l, Drain: 100 * time.Millisecond, Timeout: time.Second,
			StayReady: true, Linger: linger, Quiet: quiet,
			Srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("ok"))
			}), ReadHeaderTimeout: time.Second},
			BeforeDrain: func() { notReady.Store(true) },
		}, "http://" + l.Addr().String()
	}
	get := func(url string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			return errors.New(resp.Status)
		}
		return nil
	}

	t.Run("requests keep it", func(t *testing.T) {
		var apiNotReady, opsNotReady atomic.Bool
		api, apiURL := newServer(t, 10*time.Second, &apiNotReady)
		ops, opsURL := newServer(t, 0, &opsNotReady)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunWithOps(ctx, ops, api.Run) }()
		if err := get(apiURL); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		cancel()
		// 1.5 s of requests every 200 ms: the drain (100 ms) is long over.
		for time.Since(stopped) < 1500*time.Millisecond {
			if err := get(apiURL); err != nil {
				t.Fatalf("%s after the stop: %v", time.Since(stopped).Round(time.Millisecond), err)
			}
			if err := get(opsURL); err != nil {
				t.Fatalf("ops %s after the stop: %v", time.Since(stopped).Round(time.Millisecond), err)
			}
			if apiNotReady.Load() || opsNotReady.Load() {
				t.Fatalf("readiness turned off %s after the stop, while serving", time.Since(stopped).Round(time.Millisecond))
			}
			time.Sleep(200 * time.Millisecond)
		}
		lastAt := time.Now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		http.DefaultClient.CloseIdleConnections()
		if d := time.Since(lastAt); d < quiet-300*time.Millisecond || d > quiet+2*time.Second {
			t.Errorf("stopped %s after the last request, want about Quiet (%s)", d.Round(time.Millisecond), quiet)
		}
		if !apiNotReady.Load() || !opsNotReady.Load() {
			t.Error("readiness never turned off")
		}
	})

	t.Run("no request: Drain", func(t *testing.T) {
		var notReady atomic.Bool
		api, _ := newServer(t, 10*time.Second, &notReady)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, api.Run) }()
		time.Sleep(50 * time.Millisecond)
		stopped := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(stopped); d > 2*time.Second {
			t.Errorf("a drain with no request took %s, want about Drain (100ms)", d.Round(time.Millisecond))
		}
	})

	t.Run("Linger bounds it", func(t *testing.T) {
		var notReady atomic.Bool
		api, apiURL := newServer(t, 700*time.Millisecond, &notReady)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, api.Run) }()
		if err := get(apiURL); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		cancel()
		end := make(chan struct{})
		go func() {
			defer close(end)
			for time.Since(stopped) < 6*time.Second {
				if get(apiURL) != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(stopped); d > 3*time.Second {
			t.Errorf("stopped %s after the stop under requests, want Linger (700ms)", d.Round(time.Millisecond))
		}
		<-end
		http.DefaultClient.CloseIdleConnections()
	})
}
