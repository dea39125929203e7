package pubsub_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/pubsub"
)

// node is a WebSocket server on loopback that answers one subscribe
// request with answer, then sends notes.
func node(t *testing.T, answer string, notes ...string) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/no-pubsub" {
			http.NotFound(w, r)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var req struct {
			Method string `json:"method"`
		}
		if c.ReadJSON(&req) != nil || req.Method != "programSubscribe" {
			return
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(answer))
		for _, n := range notes {
			_ = c.WriteMessage(websocket.TextMessage, []byte(n))
		}
		_, _, _ = c.ReadMessage() // until the client goes
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func cfg(url string) pubsub.Config {
	return pubsub.Config{URL: config.Secret(url), Ping: time.Second, Silence: 2 * time.Second,
		Backoff: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, MaxMessage: 1 << 10}
}

var req = pubsub.Request{Method: "programSubscribe", Params: []any{"Tokenkeg"}}

// TestSession: the subscription's id, then every notification in order,
// and a message over MaxMessage ends the socket with why.
func TestSession(t *testing.T) {
	url := node(t, `{"jsonrpc":"2.0","result":42,"id":1}`, `{"n":1}`, `{"n":2}`, `{"n":"`+strings.Repeat("x", 2000)+`"}`)
	var got []string
	connected := false
	_, err := pubsub.Session(context.Background(), cfg(url), req, func() { connected = true }, func(msg []byte, id uint64) error {
		if id != 42 {
			t.Errorf("subscription %d, want 42", id)
		}
		got = append(got, string(msg))
		return nil
	})
	if !connected || strings.Join(got, " ") != `{"n":1} {"n":2}` {
		t.Errorf("connected %v, notifications %q", connected, got)
	}
	if err == nil || !strings.Contains(err.Error(), "over 1024 bytes") {
		t.Errorf("the long message: %v", err)
	}
}

// TestRefused: a node without PubSub (HTTP 404 on the upgrade) and one
// refusing the method are RefusedError; a notification the owner cannot
// read ends the socket with its error.
func TestRefused(t *testing.T) {
	never := func(msg []byte, _ uint64) error { t.Errorf("a notification: %s", msg); return nil }
	var refused *pubsub.RefusedError
	url := node(t, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`)
	if _, err := pubsub.Session(context.Background(), cfg(url), req, func() {}, never); !errors.As(err, &refused) ||
		err.Error() != "programSubscribe refused: JSON-RPC -32601 Method not found" {
		t.Errorf("a refused method: %v", err)
	}
	if _, err := pubsub.Session(context.Background(), cfg(url+"/no-pubsub"), req, func() {}, never); !errors.As(err, &refused) {
		t.Errorf("a refused upgrade: %v", err)
	}
	url = node(t, `{"jsonrpc":"2.0","result":42,"id":1}`, `garbage`)
	bad := errors.New("not a notification")
	if _, err := pubsub.Session(context.Background(), cfg(url), req, func() {}, func([]byte, uint64) error { return bad }); !errors.Is(err, bad) {
		t.Errorf("an unreadable notification: %v", err)
	}
}

// TestKeep: a refused node is unsupported, and asked again after
// BackoffMax; Keep ends with its context.
func TestKeep(t *testing.T) {
	url := node(t, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	states := make(chan string, 16)
	reconnects := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		pubsub.Keep(ctx, cfg(url), req, pubsub.Hooks{
			State:        func(s string, _ error) { states <- s },
			Reconnect:    func() { reconnects++ },
			Notification: func([]byte, uint64) error { return nil },
		})
	}()
	for range 2 {
		select {
		case s := <-states:
			if s != "unsupported" {
				t.Errorf("state %q, want unsupported", s)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no state within 5 s")
		}
	}
	cancel()
	<-done
	if reconnects < 1 {
		t.Errorf("%d reconnects after two refusals", reconnects)
	}
}

// TestSubscribed: the answer's shapes.
func TestSubscribed(t *testing.T) {
	if id, err := pubsub.Subscribed([]byte(`{"jsonrpc":"2.0","result":23784,"id":1}`), "programSubscribe"); err != nil || id != 23784 {
		t.Errorf("an answer: %d %v", id, err)
	}
	for _, bad := range []string{`{"jsonrpc":"2.0","result":0,"id":1}`, `{"jsonrpc":"2.0","result":5,"id":2}`, `{"jsonrpc":"2.0","result":"x","id":1}`, `not json`} {
		if id, err := pubsub.Subscribed([]byte(bad), "programSubscribe"); err == nil {
			t.Errorf("%s: taken as %d", bad, id)
		}
	}
}
