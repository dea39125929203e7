package supply

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

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Subscriptions to the mint account, one per ledger node, over Solana's
// PubSub WebSocket (SOLANA_WS_URLS): a change of the mint reaches the API
// in seconds instead of at the next SUPPLY_REFRESH.
//
// A notification never publishes anything by itself: it pokes the supply
// job (collector.Runner.Poke), whose poll reads every node through the
// cross-check, so only a figure a quorum confirms is published. Other
// nodes may not have reached the notified slot yet, so the collector pokes
// again after 250 ms, 500 ms, 1 s, 2 s, 2 s… until the published supply's
// slot reaches the notified one or pushBound passes; notifications of
// several nodes about one change coalesce into that one chase. Polling on
// SUPPLY_REFRESH stays as the safety net, and a subscription down never
// makes the service degraded.
//
// The client is a small one on gorilla/websocket rather than solana-go's
// rpc/ws: that one waits a fixed 60 s for a pong, sets no read limit,
// buffers up to 200,000 notifications per subscription and never
// reconnects. This one reads at most maxSocketMessage per message, pings
// every SUPPLY_WS_PING, drops a socket silent (no message nor pong) for
// SUPPLY_WS_SILENCE, reconnects with exponential backoff and ±50 % jitter
// (SUPPLY_WS_BACKOFF up to SUPPLY_WS_BACKOFF_MAX) and subscribes again on
// every connection. A node that refuses the upgrade (HTTP 4xx: a provider
// without PubSub) or the method is "unsupported", polled as before, and
// tried again only every SUPPLY_WS_BACKOFF_MAX.

// maxSocketMessage bounds one PubSub message: a mint account notification
// is well under 2 KiB, even base64 with Token-2022 metadata.
const maxSocketMessage = 1 << 20

// pushBound is how long the collector keeps poking after a notification
// for the published slot to reach the notified one.
const pushBound = 10 * time.Second

// pushDelays are the waits between pokes of one chase; the last repeats.
var pushDelays = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// socketWriteWait bounds one write (a request or a ping).
const socketWriteWait = 10 * time.Second

// nodeSub is the subscription to one node.
type nodeSub struct {
	node int
	url  config.Secret // "": off

	// guarded by Collector.subMu
	rec contract.LedgerSubscription
}

// errRefused is a node refusing PubSub: the upgrade (HTTP 4xx) or the
// method.
type errRefused struct{ why string }

func (e *errRefused) Error() string { return e.why }

// initSubscriptions sets up a nodeSub per node from SOLANA_WS_URLS.
func (c *Collector) initSubscriptions(common config.Common) {
	now := time.Now().UTC()
	for i, u := range common.LedgerWSs() {
		s := &nodeSub{node: i + 1, url: u, rec: contract.LedgerSubscription{Node: i + 1, State: contract.SubscriptionConnecting, Since: now}}
		if u == "" {
			s.rec.State = contract.SubscriptionOff
		}
		c.subs = append(c.subs, s)
		c.metrics.ObserveSubscription(s.node, s.rec.State)
	}
	c.metrics.InitSubscriptions(len(c.subs))
	c.runner.SetSubscriptions(c.subRecords())
}

// subRecords is a copy of every node's subscription record.
func (c *Collector) subRecords() []contract.LedgerSubscription {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	out := make([]contract.LedgerSubscription, len(c.subs))
	for i, s := range c.subs {
		out[i] = s.rec
	}
	return out
}

// setState moves s to state (with the error that ended the last socket,
// if any) and writes the status record at once when the state changed.
func (c *Collector) setState(ctx context.Context, s *nodeSub, state string, cause error) {
	c.subMu.Lock()
	changed := s.rec.State != state
	if changed {
		s.rec.State, s.rec.Since = state, time.Now().UTC()
	}
	if cause != nil {
		s.rec.Error = collector.Clip(c.runner.Redactor.Redact(cause.Error()))
	} else if state == contract.SubscriptionConnected {
		s.rec.Error = ""
	}
	c.subMu.Unlock()
	c.metrics.ObserveSubscription(s.node, state)
	if !changed {
		c.runner.SetSubscriptions(c.subRecords())
		return
	}
	c.log.Info("ledger subscription", "node", s.node, "state", state, "error", c.runner.Redactor.Redact(errText(cause)))
	c.runner.WriteSubscriptions(ctx, c.subRecords())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// runSubscriptions keeps every node's subscription until ctx ends, and
// chases each notified change until it is published.
func (c *Collector) runSubscriptions(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range c.subs {
		if s.url != "" {
			wg.Go(func() { c.keep(ctx, s) })
		}
	}
	wg.Go(func() { c.chase(ctx) })
	wg.Wait()
}

// keep opens node s's socket, again and again, until ctx ends.
func (c *Collector) keep(ctx context.Context, s *nodeSub) {
	failures := 0
	for first := true; ; first = false {
		if !first {
			c.subMu.Lock()
			s.rec.Reconnects++
			c.subMu.Unlock()
			c.metrics.ObserveReconnect(s.node)
			c.runner.SetSubscriptions(c.subRecords())
		}
		connectedFor, err := c.session(ctx, s)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		var refused *errRefused
		if errors.As(err, &refused) {
			c.setState(ctx, s, contract.SubscriptionUnsupported, err)
			wait = c.cfg.WSBackoffMax
		} else {
			c.setState(ctx, s, contract.SubscriptionConnecting, err)
			if connectedFor >= c.cfg.WSSilence {
				failures = 0 // it had proved itself: start the backoff over
			}
			wait = min(c.cfg.WSBackoff<<min(failures, 20), c.cfg.WSBackoffMax)
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

// wsDialer opens the sockets: a bounded handshake, the proxy of the
// environment as for the RPC.
var wsDialer = websocket.Dialer{
	Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second,
	ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10,
}

// session is one socket: dial, subscribe, read notifications until it
// fails. It returns how long it was subscribed, and why it ended (never
// quoting the URL: the caller redacts once more).
func (c *Collector) session(ctx context.Context, s *nodeSub) (time.Duration, error) {
	conn, resp, err := wsDialer.DialContext(ctx, s.url.Reveal(), nil)
	if err != nil {
		if resp != nil {
			_ = resp.Body.Close()
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				return 0, &errRefused{fmt.Sprintf("the node refused the WebSocket upgrade with HTTP %d: no PubSub on this URL (polled only)", resp.StatusCode)}
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
	conn.SetReadLimit(maxSocketMessage)
	silence := c.cfg.WSSilence
	alive := func() { _ = conn.SetReadDeadline(time.Now().Add(silence)) }
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(socketWriteWait))
		return conn.WriteJSON(v)
	}
	go func() { // ping; a closed context closes the socket
		t := time.NewTicker(c.cfg.WSPing)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				_ = conn.Close()
				return
			case <-t.C:
				if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(socketWriteWait)) != nil {
					_ = conn.Close()
					return
				}
			}
		}
	}()

	const reqID = 1
	if err := write(map[string]any{"jsonrpc": "2.0", "id": reqID, "method": "accountSubscribe",
		"params": []any{c.mint.String(), map[string]string{"commitment": c.cfg.Commitment, "encoding": "base64"}}}); err != nil {
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
			return since(), readError(err, silence)
		}
		alive()
		if typ != websocket.TextMessage {
			return since(), errors.New("the node sent a binary frame: not PubSub")
		}
		if subID == 0 {
			if subID, err = subscribed(msg); err != nil {
				return 0, err
			}
			connectedAt = time.Now()
			c.setState(ctx, s, contract.SubscriptionConnected, nil)
			continue
		}
		slot, err := notification(msg, subID)
		if err != nil {
			return since(), err
		}
		c.notified(s, slot)
	}
}

// subscribed reads the answer to accountSubscribe: the subscription id,
// or why there is none (errRefused when the node refuses the method).
func subscribed(msg []byte) (uint64, error) {
	var m socketMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, errors.New("the node sent a frame that is not JSON")
	}
	if m.Error != nil {
		// The node's message may quote the key: the caller redacts it,
		// then bounds it (a cut before would hide a piece of the key).
		return 0, &errRefused{fmt.Sprintf("accountSubscribe refused: JSON-RPC %d %s", m.Error.Code, m.Error.Message)}
	}
	var id uint64
	if string(m.ID) != "1" || json.Unmarshal(m.Result, &id) != nil || id == 0 {
		return 0, errors.New("the node answered accountSubscribe without a subscription id")
	}
	return id, nil
}

// notification reads an accountNotification of subscription subID and
// returns its context slot, or why the frame is not one.
func notification(msg []byte, subID uint64) (uint64, error) {
	var m socketMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, errors.New("the node sent a frame that is not JSON")
	}
	if m.Method != "accountNotification" {
		return 0, errors.New("the node sent a message that is not an accountNotification")
	}
	if m.Params.Subscription != subID || m.Params.Result.Context.Slot == 0 || len(m.Params.Result.Value) == 0 {
		return 0, errors.New("the node sent an accountNotification of the wrong shape")
	}
	return m.Params.Result.Context.Slot, nil
}

// socketMessage is any PubSub message the collector expects.
type socketMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
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
func readError(err error, silence time.Duration) error {
	var ne net.Error
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the socket was silent for %s (no message, no pong)", silence)
	case errors.Is(err, websocket.ErrReadLimit):
		return fmt.Errorf("the node sent a message over %d bytes", maxSocketMessage)
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

// notified records a notification of node s at slot and starts (or
// extends) the chase of that change.
func (c *Collector) notified(s *nodeSub, slot uint64) {
	now := time.Now().UTC()
	c.subMu.Lock()
	s.rec.LastNotificationAt, s.rec.LastNotificationSlot = &now, slot
	if slot > c.pushSlot {
		c.pushSlot = slot
	}
	c.pushAt = now
	c.subMu.Unlock()
	c.metrics.ObserveNotification(s.node)
	c.runner.SetSubscriptions(c.subRecords())
	select {
	case c.pushes <- struct{}{}:
	default: // a chase is pending: it reads pushSlot
	}
}

// chase pokes the supply job at each notified change, then again with a
// growing delay until the published slot reaches the notified one, or
// pushBound after the last notification. Notifications of the same slot
// (the other nodes telling the same change) add no poll.
func (c *Collector) chase(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.pushes:
		}
		var poked uint64 // the highest notified slot poked for
		step, timer := 0, false
		for {
			c.subMu.Lock()
			target, last := c.pushSlot, c.pushAt
			c.subMu.Unlock()
			if time.Since(last) > pushBound {
				break
			}
			published, _ := c.lastPublished(contract.DomainSupply)
			switch {
			case target > poked:
				// A change not poked for yet: poll at once, even when
				// the published slot already reaches it (a change within
				// one slot, as a simulated ledger makes, is read by the
				// next poll alone).
				c.runner.Poke(contract.DomainSupply)
				poked, step = target, 0
			case published >= target:
				poked = 0
			case timer: // some node had not reached it: again
				c.runner.Poke(contract.DomainSupply)
			}
			if poked == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-c.pushes: // a newer slot pokes at once; the same one waits
				timer = false
			case <-time.After(pushDelays[min(step, len(pushDelays)-1)]):
				step, timer = step+1, true
			}
		}
	}
}
