package solanasim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// Solana's PubSub over WebSocket, as a node serves it: on the port and
// path of the JSON-RPC (a GET with Upgrade: websocket; providers publish
// their wss:// URL with the same path and key), JSON-RPC 2.0 text frames.
//
//	→ {"jsonrpc":"2.0","id":1,"method":"accountSubscribe","params":["<mint>",{"commitment":"finalized","encoding":"base64"}]}
//	← {"jsonrpc":"2.0","result":23784,"id":1}
//	← {"jsonrpc":"2.0","method":"accountNotification","params":{"result":{"context":{"slot":5199307},"value":{"lamports":…,"data":["…","base64"],"owner":"…","executable":false,"rentEpoch":…,"space":82}},"subscription":23784}}
//	→ {"jsonrpc":"2.0","id":2,"method":"accountUnsubscribe","params":[23784]}
//	← {"jsonrpc":"2.0","result":true,"id":2}
//
// A notification is sent when the account, as the node sees it (a lagging
// node: as it was its lag ago, at its lagged slot), differs from what the
// subscription last saw; nothing is sent at subscribe time. The encodings
// are getAccountInfo's. Errors are the node's: -32700 for a frame that is
// not JSON, -32600 for one that is not a request, -32601 for a method the
// PubSub does not serve (getAccountInfo included), -32602 for bad params
// and an unknown subscription id.

// SocketFault is a fault of a node's PubSub WebSocket (NodeFault.Socket).
type SocketFault string

// Socket faults.
const (
	// SocketOK serves PubSub.
	SocketOK SocketFault = ""
	// SocketDrop drops every open socket (the TCP connection closed, no
	// close frame) when it is set, and each socket opened while it holds
	// right after its upgrade: a node whose sockets keep dying.
	SocketDrop SocketFault = "ws-drop"
	// SocketStall makes every open socket, and each opened while it
	// holds, go silent for good: it stays open and reads, but answers
	// nothing, notifies nothing and answers no ping. Clearing the fault
	// does not revive a stalled socket; only a new one works.
	SocketStall SocketFault = "ws-stall"
	// SocketGarble sends, on every open socket when it is set and in
	// place of every message while it holds, a frame that is not what
	// the protocol says: text that is not JSON, a binary frame, or JSON
	// of the wrong shape, in turn.
	SocketGarble SocketFault = "ws-garble"
	// SocketOff is a node without PubSub: the upgrade is refused with
	// HTTP 405, as by a provider that serves JSON-RPC over HTTP only.
	SocketOff SocketFault = "ws-off"
)

// RouteAccountNotification is the fault route of the notifications of
// account subscriptions: fault.Latency sends that many of them (Times)
// after its Delay, fault.Lost drops them without a word; the socket is
// kept open either way.
const RouteAccountNotification = "accountNotification"

// Bounds of the simulated PubSub.
const (
	maxPubSubMessage = 64 << 10
	maxSubsPerSocket = 64
	socketWriteWait  = 5 * time.Second
)

// isUpgrade reports whether r asks for a WebSocket.
func isUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && websocket.IsWebSocketUpgrade(r)
}

// socketSet is the open sockets of a listener.
type socketSet struct {
	mu   sync.Mutex
	open map[*socket]struct{}
}

func (ss *socketSet) add(c *socket) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.open == nil {
		ss.open = map[*socket]struct{}{}
	}
	ss.open[c] = struct{}{}
}

func (ss *socketSet) remove(c *socket) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.open, c)
}

func (ss *socketSet) each(f func(*socket)) {
	ss.mu.Lock()
	list := make([]*socket, 0, len(ss.open))
	for c := range ss.open {
		list = append(list, c)
	}
	ss.mu.Unlock()
	for _, c := range list {
		f(c)
	}
}

// closeAll drops every open socket.
func (ss *socketSet) closeAll() { ss.each(func(c *socket) { c.drop() }) }

// Len is the number of open sockets.
func (ss *socketSet) Len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.open)
}

// socket is one PubSub connection.
type socket struct {
	srv   *Server
	req   *http.Request // the upgrade's: the key a refusal quotes
	conn  *websocket.Conn
	seen  func() view        // the node's view now
	fault func() SocketFault // the node's socket fault now (nil: none)

	writeMu sync.Mutex
	stalled atomic.Bool
	garbled atomic.Uint64

	mu    sync.Mutex
	subs  map[uint64]*accountSub
	psubs map[uint64]*programSub // pubsub_program.go
}

// accountSub is one accountSubscribe.
type accountSub struct {
	key  ledger.Key
	cfg  accountInfoConfig
	last []byte // the value last notified (or seen at subscribe time)
}

var upgrader = websocket.Upgrader{
	ReadBufferSize: 4 << 10, WriteBufferSize: 16 << 10,
	CheckOrigin: func(*http.Request) bool { return true },
}

// servePubSub upgrades r and serves PubSub on it until the client leaves,
// the socket is dropped, or the listener closes.
func (s *Server) servePubSub(w http.ResponseWriter, r *http.Request, set *socketSet, seen func() view, fault func() SocketFault) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the error
	}
	c := &socket{srv: s, req: r, conn: conn, seen: seen, fault: fault, subs: map[uint64]*accountSub{}, psubs: map[uint64]*programSub{}}
	conn.SetReadLimit(maxPubSubMessage)
	conn.SetPingHandler(func(data string) error {
		if c.silent() {
			return nil
		}
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(socketWriteWait))
	})
	set.add(c)
	defer set.remove(c)
	defer conn.Close()
	switch c.currentFault() {
	case SocketDrop:
		return
	case SocketStall:
		c.stalled.Store(true)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go c.notify(ctx, s.ledger.Changes()) // taken before any subscription
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		c.handle(msg)
	}
}

func (c *socket) currentFault() SocketFault {
	if c.fault == nil {
		return SocketOK
	}
	return c.fault()
}

// silent reports a stalled socket.
func (c *socket) silent() bool {
	if c.currentFault() == SocketStall {
		c.stalled.Store(true)
	}
	return c.stalled.Load()
}

// drop closes the connection without a close frame.
func (c *socket) drop() { _ = c.conn.NetConn().Close() }

// garbage is the nth garbled frame: text that is not JSON, a binary
// frame, JSON of the wrong shape.
func garbage(n uint64) (int, []byte) {
	switch n % 3 {
	case 0:
		return websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"accountNotif`)
	case 1:
		return websocket.BinaryMessage, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xff, 0x13}
	}
	return websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"accountNotification","params":{"result":"garbled","subscription":"x"}}`)
}

// sendGarbage writes one garbled frame.
func (c *socket) sendGarbage() {
	typ, b := garbage(c.garbled.Add(1) - 1)
	c.write(typ, b)
}

// send writes one message as the socket's fault allows.
func (c *socket) send(msg []byte) {
	switch {
	case c.silent():
		return
	case c.currentFault() == SocketGarble:
		c.sendGarbage()
		return
	}
	c.write(websocket.TextMessage, msg)
}

func (c *socket) write(typ int, msg []byte) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(socketWriteWait))
	if err := c.conn.WriteMessage(typ, msg); err != nil {
		c.drop()
	}
}

// reply writes a response to request id.
func (c *socket) reply(id json.RawMessage, result any, rerr *rpcError) {
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
		ID      json.RawMessage `json:"id"`
	}{JSONRPC: "2.0", Result: result, Error: rerr, ID: id}
	if resp.ID == nil {
		resp.ID = json.RawMessage("null")
	}
	b, err := json.Marshal(resp)
	if err == nil {
		c.send(b)
	}
}

// handle answers one request frame.
func (c *socket) handle(msg []byte) {
	if !json.Valid(msg) {
		c.reply(nil, nil, &rpcError{Code: CodeParseError, Message: "Parse error"})
		return
	}
	if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		c.reply(nil, nil, &rpcError{Code: CodeInvalidRequest, Message: "Invalid request"})
		return
	}
	call := parseCall(msg)
	if call.err != nil {
		c.reply(call.id, nil, call.err)
		return
	}
	switch call.method {
	case "accountSubscribe", "programSubscribe":
		if refused := c.refusal(call.method); refused != nil {
			if refused != errDropped {
				c.reply(call.id, nil, refused)
			}
			return
		}
	}
	switch call.method {
	case "accountSubscribe":
		id, rerr := c.subscribe(call.params)
		if rerr != nil {
			c.reply(call.id, nil, rerr)
			return
		}
		c.reply(call.id, id, nil)
	case "programSubscribe":
		id, rerr := c.programSubscribe(call.params)
		if rerr != nil {
			c.reply(call.id, nil, rerr)
			return
		}
		c.reply(call.id, id, nil)
	case "accountUnsubscribe", "programUnsubscribe":
		ok, rerr := c.unsubscribe(call.params)
		if rerr != nil {
			c.reply(call.id, nil, rerr)
			return
		}
		c.reply(call.id, ok, nil)
	default:
		c.reply(call.id, nil, &rpcError{Code: CodeMethodNotFound, Message: "Method not found"})
	}
}

// viewCtx is a context carrying the node's view now.
func (c *socket) viewCtx() context.Context {
	return context.WithValue(context.Background(), viewKey{}, c.seen())
}

func (c *socket) subscribe(params json.RawMessage) (uint64, *rpcError) {
	ps, e := positional(params, 1, 2)
	if e != nil {
		return 0, e
	}
	k, e := pubkeyParam(ps[0])
	if e != nil {
		return 0, e
	}
	var cfg accountInfoConfig
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return 0, e
	}
	if e := checkEncoding(cfg.Encoding); e != nil {
		return 0, e
	}
	ctx := c.viewCtx()
	cfg.MinContextSlot = nil // a subscription's notifications come at the commitment's slot, whatever it is
	_, acc, e := c.srv.account(ctx, k, cfg)
	if e != nil {
		return 0, e
	}
	last, _ := json.Marshal(acc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.subs)+len(c.psubs) >= maxSubsPerSocket {
		return 0, invalidParams("Invalid params: too many subscriptions on this connection")
	}
	id := c.srv.nextSub.Add(1)
	c.subs[id] = &accountSub{key: k, cfg: cfg, last: last}
	return id, nil
}

func (c *socket) unsubscribe(params json.RawMessage) (bool, *rpcError) {
	ps, e := positional(params, 1, 1)
	if e != nil {
		return false, e
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(ps[0])), 10, 64)
	if err != nil {
		return false, invalidParams("Invalid params: invalid type: expected u64.")
	}
	// One table of subscriptions, as the node's: either unsubscribe
	// method ends a subscription of either kind.
	c.mu.Lock()
	defer c.mu.Unlock()
	_, isAccount := c.subs[id]
	_, isProgram := c.psubs[id]
	if !isAccount && !isProgram {
		return false, invalidParams("Invalid subscription id.")
	}
	delete(c.subs, id)
	delete(c.psubs, id)
	return true, nil
}

// notify sends an accountNotification for every subscription whose
// account changed, as the node sees it, at each change of the ledger.
func (c *socket) notify(ctx context.Context, ch <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		// The next change's channel before this one's reading: a change
		// made while it reads is not missed.
		ch = c.srv.ledger.Changes()
		c.notifyChanged()
	}
}

func (c *socket) notifyChanged() {
	vctx := c.viewCtx()
	type note struct {
		id  uint64
		msg []byte
	}
	var out []note
	c.mu.Lock()
	for id, sub := range c.subs {
		slot, acc, e := c.srv.account(vctx, sub.key, sub.cfg)
		if e != nil {
			continue
		}
		b, _ := json.Marshal(acc)
		if bytes.Equal(b, sub.last) {
			continue
		}
		sub.last = b
		f, faulted := c.srv.faults.Take(RouteAccountNotification)
		if faulted && f.Kind == fault.Lost {
			continue // lost without a word
		}
		msg, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "method": "accountNotification",
			"params": map[string]any{
				"result":       map[string]any{"context": map[string]uint64{"slot": slot}, "value": json.RawMessage(b)},
				"subscription": id,
			},
		})
		switch {
		case err != nil:
		case faulted && f.Kind == fault.Latency:
			// Late: sent after the delay, the socket kept open (a node
			// that tells one subscriber after the others).
			time.AfterFunc(f.Delay, func() { c.send(msg) })
		default:
			out = append(out, note{id, msg})
		}
	}
	c.mu.Unlock()
	for _, n := range out {
		c.send(n.msg)
	}
	c.notifyPrograms()
}

// applySocketFault acts on the open sockets of set when fault f is set.
func applySocketFault(set *socketSet, f SocketFault) {
	switch f {
	case SocketDrop, SocketOff:
		set.closeAll()
	case SocketStall:
		set.each(func(c *socket) { c.stalled.Store(true) })
	case SocketGarble:
		set.each(func(c *socket) { c.sendGarbage() })
	}
}
