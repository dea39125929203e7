package store_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// holdSubscribe is a TCP proxy on loopback in front of the Redis at addr:
// what a client sends is passed on at once, except a read that carries a
// SUBSCRIBE, held for hold first (a slow network or a busy Redis on the
// subscription's connection only). It returns the proxy's address.
func holdSubscribe(t *testing.T, addr string, hold time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				_ = client.Close()
				continue
			}
			track(client)
			track(server)
			wg.Go(func() {
				_, _ = io.Copy(client, server)
				_ = client.Close()
			})
			wg.Go(func() {
				defer func() { _ = server.Close() }()
				buf := make([]byte, 64<<10)
				for {
					n, err := client.Read(buf)
					if n > 0 {
						if bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
							time.Sleep(hold)
						}
						if _, werr := server.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// TestUpdatesLiveOnReturn: Updates returns once Redis has confirmed the
// subscription, so the write that follows it is announced to it, even
// when the SUBSCRIBE takes long to reach Redis (held 1 s here, while the
// write's commands pass at once). Updates used to return as soon as the
// SUBSCRIBE was sent: that write's update was lost, and an edge that
// subscribes before its first read (mirror.Refresher) missed a change
// made during that read until its next poll.
func TestUpdatesLiveOnReturn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := redistest.Start(t)
	const hold = time.Second
	opts, err := store.ParseRedisURL("redis://" + holdSubscribe(t, srv.Addr(), hold))
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewRedis(opts)
	t.Cleanup(func() { _ = b.Close() })
	s := store.New(b, mint)

	asked := time.Now()
	updates, closeSub, err := s.Updates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeSub() }()
	if took := time.Since(asked); took < hold {
		t.Errorf("Updates returned %s after it was called, before its SUBSCRIBE (held %s) reached Redis", took, hold)
	}
	if err := s.Write(ctx, envelope(t, contract.DomainHolders, 1), time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-updates:
		if d != contract.DomainHolders {
			t.Errorf("update = %q, want holders", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write right after Updates returned was not announced to it")
	}

	// Made while Redis is down, a subscription is pending: Updates
	// returns, and the subscription is made when Redis is back.
	srv.Stop()
	downCtx, stopDown := context.WithCancel(ctx)
	defer stopDown()
	down, closeDown, err := s.Updates(downCtx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeDown() }()
	srv.Resume()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-down:
			return
		case <-tick.C: // the pool redials on demand
			_ = s.Write(ctx, envelope(t, contract.DomainMarket, 1), time.Hour)
		case <-deadline:
			t.Fatal("a subscription made while Redis was down never became live")
		}
	}
}
