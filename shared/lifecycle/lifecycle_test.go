package lifecycle

import (
	"context"
	"errors"
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
