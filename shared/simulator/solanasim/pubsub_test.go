package solanasim

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsURL turns a node's http:// URL into its ws:// one, path and query kept.
func wsURL(u string) string { return "ws" + strings.TrimPrefix(u, "http") }

func dial(t *testing.T, u string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(u), nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// frame is one message received, decoded as any PubSub message.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	Method string          `json:"method"`
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

// next reads one frame within d.
func next(t *testing.T, c *websocket.Conn, d time.Duration) (frame, []byte, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	typ, b, err := c.ReadMessage()
	if err != nil {
		return frame{}, nil, err
	}
	var f frame
	if typ != websocket.TextMessage {
		return f, b, errors.New("binary frame")
	}
	return f, b, json.Unmarshal(b, &f)
}

func request(t *testing.T, c *websocket.Conn, id int, method string, params ...any) frame {
	t.Helper()
	if err := c.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		t.Fatal(err)
	}
	f, b, err := next(t, c, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	return f
}

func subscribe(t *testing.T, c *websocket.Conn, mint, encoding string) uint64 {
	t.Helper()
	f := request(t, c, 1, "accountSubscribe", mint, map[string]string{"commitment": "finalized", "encoding": encoding})
	var id uint64
	if f.Error != nil || json.Unmarshal(f.Result, &id) != nil || id == 0 || string(f.ID) != "1" {
		t.Fatalf("accountSubscribe: %+v %s", f.Error, f.Result)
	}
	return id
}

// mintSupply reads the supply of a base64 mint account value.
func mintSupply(t *testing.T, value json.RawMessage) uint64 {
	t.Helper()
	var acc struct {
		Data  []string `json:"data"`
		Owner string   `json:"owner"`
		Space int      `json:"space"`
	}
	if err := json.Unmarshal(value, &acc); err != nil || len(acc.Data) != 2 || acc.Data[1] != "base64" {
		t.Fatalf("value %s: %v", value, err)
	}
	b, err := base64.StdEncoding.DecodeString(acc.Data[0])
	if err != nil || len(b) < 44 || acc.Space != len(b) {
		t.Fatalf("data %q: %v", acc.Data[0], err)
	}
	return binary.LittleEndian.Uint64(b[36:44])
}

func startNode(t *testing.T, s *Server) (*Node, string) {
	t.Helper()
	n := s.NewNode()
	u, err := n.StartOn(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, u
}

// TestPubSubAccountNotification: a supply change is notified with the
// real shape, in the subscription's encoding, at the commitment's slot;
// nothing is sent before it; unsubscribe stops it.
func TestPubSubAccountNotification(t *testing.T) {
	s, u := start(t, 10)
	c := dial(t, u+"/v2/k3yAAAAAAAAAA?api-key=k3yBBBBBBBB") // path and key as providers publish them
	id := subscribe(t, c, classicMint, "base64")
	idParsed := subscribe(t, c, t22Mint, "jsonParsed")
	if idParsed == id {
		t.Fatal("two subscriptions with one id")
	}
	if _, b, err := next(t, c, 300*time.Millisecond); err == nil {
		t.Fatalf("sent before any change: %s", b)
	}
	// The read deadline broke that connection: a new one.
	c = dial(t, u)
	id = subscribe(t, c, classicMint, "base64")
	s.BumpSlot(5) // the slot moves, the account does not: nothing is sent
	if err := s.SetSupply(classicMint, 999); err != nil {
		t.Fatal(err)
	}
	f, b, err := next(t, c, 5*time.Second)
	if err != nil || f.Method != "accountNotification" || f.Params.Subscription != id {
		t.Fatalf("notification: %v %s", err, b)
	}
	if want := s.Slot() - finalizedLag; f.Params.Result.Context.Slot != want {
		t.Errorf("context slot %d, want the finalized %d", f.Params.Result.Context.Slot, want)
	}
	if got := mintSupply(t, f.Params.Result.Value); got != 999 {
		t.Errorf("notified supply %d, want 999", got)
	}
	for _, field := range []string{`"lamports":`, `"owner":"` + TokenProgramID + `"`, `"executable":false`, `"rentEpoch":`, `"space":82`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("notification without %s: %s", field, b)
		}
	}

	if f := request(t, c, 7, "accountUnsubscribe", id); string(f.Result) != "true" || string(f.ID) != "7" {
		t.Fatalf("accountUnsubscribe: %s %+v", f.Result, f.Error)
	}
	if err := s.SetSupply(classicMint, 1000); err != nil {
		t.Fatal(err)
	}
	if f := request(t, c, 8, "accountUnsubscribe", id); f.Error == nil || f.Error.Code != CodeInvalidParams || f.Error.Message != "Invalid subscription id." {
		t.Fatalf("second accountUnsubscribe (and no notification after the first): %s %+v", f.Result, f.Error)
	}
}

// TestPubSubJSONParsed: a jsonParsed subscription is notified the parsed
// mint, as getAccountInfo answers it.
func TestPubSubJSONParsed(t *testing.T) {
	s, u := start(t, 10)
	c := dial(t, u)
	subscribe(t, c, t22Mint, "jsonParsed")
	if _, err := s.AdjustSupply(t22Mint, -5); err != nil {
		t.Fatal(err)
	}
	f, b, err := next(t, c, 5*time.Second)
	if err != nil || f.Method != "accountNotification" {
		t.Fatalf("notification: %v %s", err, b)
	}
	if !strings.Contains(string(f.Params.Result.Value), `"supply":"4999999999999995"`) || !strings.Contains(string(f.Params.Result.Value), `"program":"spl-token-2022"`) {
		t.Errorf("jsonParsed value: %s", f.Params.Result.Value)
	}
}

// TestPubSubErrors: the node's JSON-RPC errors on the socket.
func TestPubSubErrors(t *testing.T) {
	_, u := start(t, 10)
	c := dial(t, u)
	for _, tc := range []struct {
		name   string
		method string
		params []any
		code   int
	}{
		{"no params", "accountSubscribe", nil, CodeInvalidParams},
		{"bad key", "accountSubscribe", []any{"not-a-key!"}, CodeInvalidParams},
		{"bad encoding", "accountSubscribe", []any{classicMint, map[string]string{"encoding": "hex"}}, CodeInvalidParams},
		{"bad commitment", "accountSubscribe", []any{classicMint, map[string]string{"commitment": "soon"}}, CodeInvalidParams},
		{"unknown field", "accountSubscribe", []any{classicMint, map[string]string{"colour": "red"}}, CodeInvalidParams},
		{"unknown id", "accountUnsubscribe", []any{424242}, CodeInvalidParams},
		{"HTTP method", "getAccountInfo", []any{classicMint}, CodeMethodNotFound},
		{"unknown method", "slotsSubscribe", nil, CodeMethodNotFound},
	} {
		f := request(t, c, 3, tc.method, tc.params...)
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("%s: %s %+v, want error %d", tc.name, f.Result, f.Error, tc.code)
		}
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,`)); err != nil {
		t.Fatal(err)
	}
	if f, b, err := next(t, c, 5*time.Second); err != nil || f.Error == nil || f.Error.Code != CodeParseError || string(f.ID) != "null" {
		t.Errorf("not JSON: %v %s", err, b)
	}
}

// TestPubSubLaggingNode: a node lagging K slots notifies the change only
// once the ledger is K slots past it, at its lagged slot.
func TestPubSubLaggingNode(t *testing.T) {
	s, _ := start(t, 10)
	n, u := startNode(t, s)
	n.SetFault(NodeFault{Kind: NodeLag, Slots: 100})
	c := dial(t, u)
	subscribe(t, c, classicMint, "base64")
	if err := s.SetSupply(classicMint, 777); err != nil {
		t.Fatal(err)
	}
	if _, b, err := next(t, c, 300*time.Millisecond); err == nil {
		t.Fatalf("a node 100 slots behind notified at once: %s", b)
	}
	c = dial(t, u)
	subscribe(t, c, classicMint, "base64")
	s.BumpSlot(60)
	s.BumpSlot(60)
	f, b, err := next(t, c, 5*time.Second)
	if err != nil || f.Method != "accountNotification" || mintSupply(t, f.Params.Result.Value) != 777 {
		t.Fatalf("notification of the lagging node: %v %s", err, b)
	}
	if want := s.Slot() - 100 - finalizedLag; f.Params.Result.Context.Slot != want {
		t.Errorf("lagging node's slot %d, want %d", f.Params.Result.Context.Slot, want)
	}
}

// TestSocketOff: a node without PubSub refuses the upgrade with 405; its
// JSON-RPC still answers.
func TestSocketOff(t *testing.T) {
	s, _ := start(t, 10)
	n, u := startNode(t, s)
	n.SetSocketFault(SocketOff)
	_, resp, err := websocket.DefaultDialer.Dial(wsURL(u), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("upgrade of a node without PubSub: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	if _, rerr := rpcCall(t, u, "getSlot", nil); rerr != nil {
		t.Errorf("JSON-RPC of a node without PubSub: %+v", rerr)
	}
	n.SetSocketFault(SocketOK)
	dial(t, u)
}

// TestSocketDrop: open sockets are dropped when the fault is set, new ones
// right after their upgrade; cleared, sockets work again.
func TestSocketDrop(t *testing.T) {
	s, _ := start(t, 10)
	n, u := startNode(t, s)
	c := dial(t, u)
	subscribe(t, c, classicMint, "base64")
	n.SetSocketFault(SocketDrop)
	if _, _, err := next(t, c, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("open socket not dropped: %v", err)
	}
	c2 := dial(t, u)
	if _, _, err := next(t, c2, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("new socket not dropped: %v", err)
	}
	n.SetSocketFault(SocketOK)
	c3 := dial(t, u)
	subscribe(t, c3, classicMint, "base64")
	if err := s.SetSupply(classicMint, 5); err != nil {
		t.Fatal(err)
	}
	if f, b, err := next(t, c3, 5*time.Second); err != nil || f.Method != "accountNotification" {
		t.Fatalf("after the drop: %v %s", err, b)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestSocketStall: a stalled socket stays open but answers no ping, no
// request and notifies nothing, even once the fault is cleared.
func TestSocketStall(t *testing.T) {
	s, _ := start(t, 10)
	n, u := startNode(t, s)
	c := dial(t, u)
	subscribe(t, c, classicMint, "base64")
	pongs := make(chan struct{}, 10)
	c.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
	n.SetSocketFault(SocketStall)
	if err := c.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSupply(classicMint, 6); err != nil {
		t.Fatal(err)
	}
	if _, b, err := next(t, c, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("stalled socket: %v %s", err, b)
	}
	select {
	case <-pongs:
		t.Fatal("a stalled socket answered a ping")
	default:
	}
	if n.Sockets() != 1 {
		t.Errorf("%d sockets open, want the stalled one", n.Sockets())
	}
	n.SetSocketFault(SocketOK)
	c2 := dial(t, u)
	c2.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
	subscribe(t, c2, classicMint, "base64")
	if err := c2.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSupply(classicMint, 7); err != nil {
		t.Fatal(err)
	}
	if f, b, err := next(t, c2, 5*time.Second); err != nil || f.Method != "accountNotification" {
		t.Fatalf("new socket after the stall: %v %s", err, b)
	}
	if len(pongs) == 0 {
		_, _, _ = next(t, c2, 2*time.Second) // reading handles the pong
	}
	if len(pongs) == 0 {
		t.Fatal("no pong on the new socket")
	}
}

// TestSocketGarble: a garbled socket sends frames that are not the
// protocol's, at once and in place of every message.
func TestSocketGarble(t *testing.T) {
	s, _ := start(t, 10)
	n, u := startNode(t, s)
	c := dial(t, u)
	subscribe(t, c, classicMint, "base64")
	n.SetSocketFault(SocketGarble)
	if err := s.SetSupply(classicMint, 8); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		f, b, err := next(t, c, 5*time.Second)
		if isTimeout(err) {
			t.Fatalf("frame %d: nothing sent", i)
		}
		if err == nil && f.Method == "accountNotification" && f.Params.Subscription != 0 {
			t.Fatalf("frame %d is a well-formed notification: %s", i, b)
		}
	}
	n.SetSocketFault(SocketOK)
	c2 := dial(t, u)
	subscribe(t, c2, classicMint, "base64")
	if err := s.SetSupply(classicMint, 9); err != nil {
		t.Fatal(err)
	}
	if f, b, err := next(t, c2, 5*time.Second); err != nil || f.Method != "accountNotification" || mintSupply(t, f.Params.Result.Value) != 9 {
		t.Fatalf("after the garbling: %v %s", err, b)
	}
}

// TestControlBurnAndMint: the control endpoint changes the supply of the
// default token, on the server's port and a node's, and notifies.
func TestControlBurnAndMint(t *testing.T) {
	s, u := start(t, 10)
	_, nu := startNode(t, s)
	c := dial(t, nu)
	subscribe(t, c, classicMint, "base64")
	before, _ := s.Supply(classicMint)
	status, b := post(t, nu+"/_simulator/burn?amount=123", "")
	var got struct {
		Mint, Supply string
		Slot         uint64
	}
	if err := json.Unmarshal(b, &got); status != 200 || err != nil || got.Mint != classicMint || got.Slot != s.Slot() {
		t.Fatalf("burn: %d %s", status, b)
	}
	if after, _ := s.Supply(classicMint); after != before-123 || got.Supply != jsonU64(after) {
		t.Fatalf("burn: supply %d after %d, answered %s", after, before, got.Supply)
	}
	if f, b, err := next(t, c, 5*time.Second); err != nil || mintSupply(t, f.Params.Result.Value) != before-123 {
		t.Fatalf("notification of the burn: %v %s", err, b)
	}
	if status, b := post(t, u+"/_simulator/mint?amount=23&mint="+t22Mint, ""); status != 200 || !strings.Contains(string(b), `"supply":"5000000000000023"`) {
		t.Fatalf("mint: %d %s", status, b)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/_simulator/burn", 400},
		{"/_simulator/burn?amount=-4", 400},
		{"/_simulator/burn?amount=9223372036854775807", 400}, // below 0
		{"/_simulator/mint?amount=1&mint=" + key("nobody"), 404},
		{"/_simulator/melt?amount=1", 404},
	} {
		if status, b := post(t, u+tc.path, ""); status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.path, status, b, tc.want)
		}
	}
	resp, err := http.Get(u + "/_simulator/burn?amount=1")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

func jsonU64(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// TestParseSocketFaults: socket faults alone and joined to a node fault.
func TestParseSocketFaults(t *testing.T) {
	for in, want := range map[string]NodeFault{
		"ws-drop":           {Socket: SocketDrop},
		"ws-stall":          {Socket: SocketStall},
		"ws-garble":         {Socket: SocketGarble},
		"ws-off":            {Socket: SocketOff},
		"lag:1000+ws-stall": {Kind: NodeLag, Slots: 1000, Socket: SocketStall},
		"ws-off+down":       {Kind: NodeDown, Socket: SocketOff},
		"lag:5":             {Kind: NodeLag, Slots: 5},
	} {
		got, err := ParseNodeFault(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"ws-nap", "ws-drop+ws-off", "lag:1+down", "+", "ws-drop+"} {
		if _, err := ParseNodeFault(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
