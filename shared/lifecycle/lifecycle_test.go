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
