// Package pubsub keeps a subscription to a Solana node's PubSub
// WebSocket: the supply collector's to the mint account, the holders
// collector's to the token program's accounts of the mint.
//
// The client is a small one on gorilla/websocket rather than solana-go's
// rpc/ws: that one waits a fixed 60 s for a pong, sets no read limit,
// buffers up to 200,000 notifications per subscription and never
// reconnects. This one reads at most Config.MaxMessage per message, pings
// every Config.Ping, drops a socket silent (no message nor pong) for
// Config.Silence, reconnects with exponential backoff and ±50 % jitter
// (Config.Backoff up to Config.BackoffMax) and subscribes again on every
// connection. A node that refuses the upgrade (HTTP 4xx: a provider
// without PubSub) or the method is "unsupported" (RefusedError), and
// tried again only every Config.BackoffMax.
//
// Nothing here quotes the URL, which carries the provider's key: errors
// say what failed, and the callers redact them once more.
package pubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Config is one node's socket and how it is kept.
type Config struct {
	// URL is the node's PubSub URL (ws:// or wss://).
	URL config.Secret
	// Ping is how often the socket is pinged; Silence how long it may
	// send nothing (no message, no pong) before it is dropped.
	Ping, Silence time.Duration
	// Backoff is the first wait before a reconnection; each failure
	// doubles it, up to BackoffMax, which is also the wait after a
	// refusal.
	Backoff, BackoffMax time.Duration
	// MaxMessage bounds one message (bytes).
	MaxMessage int64
}

// Request is the subscription asked on every connection: a JSON-RPC
// method (accountSubscribe, programSubscribe) and its params.
type Request struct {
	Method string
	Params []any
}

// Hooks are what a subscription tells its owner.
type Hooks struct {
	// State is called at each change of state (contract.Subscription*),
	// with the error that ended the last socket (nil once connected).
	State func(state string, cause error)
	// Reconnect, when set, is called before every attempt but the first.
	Reconnect func()
	// Notification takes each message after the subscription's answer,
	// with the subscription's id; an error ends the socket (a message
	// that is not one is a gap in the stream).
	Notification func(msg []byte, subID uint64) error
}

// RefusedError is a node refusing PubSub: the upgrade (HTTP 4xx) or the
// method.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// Keep opens the socket, again and again, until ctx ends.
func Keep(ctx context.Context, cfg Config, req Request, h Hooks) {
	failures := 0
	for first := true; ; first = false {
		if !first && h.Reconnect != nil {
			h.Reconnect()
		}
		connectedFor, err := Session(ctx, cfg, req, func() { h.State(contract.SubscriptionConnected, nil) }, h.Notification)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		var refused *RefusedError
		if errors.As(err, &refused) {
			h.State(contract.SubscriptionUnsupported, err)
			wait = cfg.BackoffMax
		} else {
			h.State(contract.SubscriptionConnecting, err)
			if connectedFor >= cfg.Silence {
				failures = 0 // it had proved itself: start the backoff over
			}
			wait = min(cfg.Backoff<<min(failures, 20), cfg.BackoffMax)
			failures++
		}
		wait = wait/2 + rand.N(wait+1) // ±50 %
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// dialer opens the sockets: a bounded handshake, the proxy of the
// environment as for the RPC.
var dialer = websocket.Dialer{
	Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second,
	ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10,
}

// writeWait bounds one write (a request or a ping).
const writeWait = 10 * time.Second

// Session is one socket: dial, subscribe, call connected once the node
// gave the subscription's id, then hand every message to notification
// until the socket fails or ctx ends. It returns how long it was
// subscribed, and why it ended.
func Session(ctx context.Context, cfg Config, req Request, connected func(), notification func(msg []byte, subID uint64) error) (time.Duration, error) {
	conn, resp, err := dialer.DialContext(ctx, cfg.URL.Reveal(), nil)
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				return 0, &RefusedError{fmt.Sprintf("the node refused the WebSocket upgrade with HTTP %d: no PubSub on this URL (polled only)", resp.StatusCode)}
			}
			return 0, fmt.Errorf("the WebSocket upgrade failed with HTTP %d", resp.StatusCode)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, errors.New("the WebSocket handshake timed out")
		}
		return 0, fmt.Errorf("no WebSocket connection: %w", scrubDialError(err))
	}
	defer conn.Close()
	conn.SetReadLimit(cfg.MaxMessage)
	alive := func() { _ = conn.SetReadDeadline(time.Now().Add(cfg.Silence)) }
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteJSON(v)
	}
	go func() { // ping; a closed context closes the socket
		t := time.NewTicker(cfg.Ping)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				_ = conn.Close()
				return
			case <-t.C:
				if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
					_ = conn.Close()
					return
				}
			}
		}
	}()

	if err := write(map[string]any{"jsonrpc": "2.0", "id": 1, "method": req.Method, "params": req.Params}); err != nil {
		return 0, errors.New("the subscribe request could not be sent")
	}
	var subID uint64
	var connectedAt time.Time
	since := func() time.Duration {
		if connectedAt.IsZero() {
			return 0
		}
		return time.Since(connectedAt)
	}
	for {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			return since(), readError(err, cfg)
		}
		alive()
		if typ != websocket.TextMessage {
			return since(), errors.New("the node sent a binary frame: not PubSub")
		}
		if subID == 0 {
			if subID, err = Subscribed(msg, req.Method); err != nil {
				return 0, err
			}
			connectedAt = time.Now()
			connected()
			continue
		}
		if err := notification(msg, subID); err != nil {
			return since(), err
		}
	}
}

// Subscribed reads the answer to a subscribe request of method: the
// subscription id, or why there is none (RefusedError when the node
// refuses the method).
func Subscribed(msg []byte, method string) (uint64, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, errors.New("the node sent a frame that is not JSON")
	}
	if m.Error != nil {
		// The node's message may quote the key: the caller redacts it,
		// then bounds it (a cut before would hide a piece of the key).
		return 0, &RefusedError{fmt.Sprintf("%s refused: JSON-RPC %d %s", method, m.Error.Code, m.Error.Message)}
	}
	var id uint64
	if string(m.ID) != "1" || json.Unmarshal(m.Result, &id) != nil || id == 0 {
		return 0, fmt.Errorf("the node answered %s without a subscription id", method)
	}
	return id, nil
}

// Notification is the envelope of every PubSub notification; Value is
// the subscription's own (an account, a program's keyed account), read by
// its owner.
type Notification struct {
	Method string `json:"method"`
	Params struct {
		Result struct {
			Context struct {
				Slot uint64 `json:"slot"`
			} `json:"context"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Subscription uint64 `json:"subscription"`
	} `json:"params"`
}

// readError says why a socket's read ended.
func readError(err error, cfg Config) error {
	var ne net.Error
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the socket was silent for %s (no message, no pong)", cfg.Silence)
	case errors.Is(err, websocket.ErrReadLimit):
		return fmt.Errorf("the node sent a message over %d bytes", cfg.MaxMessage)
	case errors.As(err, &ce):
		return fmt.Errorf("the node closed the socket (code %d)", ce.Code)
	}
	return errors.New("the socket was dropped")
}

// scrubDialError keeps what a dial error says, without the address it
// quotes beyond the host (the redactor masks a key-like host label).
func scrubDialError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return errors.New("no such host")
	}
	return errors.New("connection failed")
}
