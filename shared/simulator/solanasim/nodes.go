package solanasim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// Several ledger nodes over one ledger. A Node is an RPC endpoint of its
// own (its own port) that answers from the Server's ledger as a node of a
// provider would, with a fault of its own: it lags by K slots (it answers
// the state the mint had K slots ago, and honours minContextSlot with the
// real -32016 error), it answers a wrong supply, it is down, or it is a
// load balancer that alternates between a current and a lagging node.

// NodeFaultKind is a ledger node's fault.
type NodeFaultKind string

// Node faults.
const (
	// NodeHealthy answers the ledger as it is.
	NodeHealthy NodeFaultKind = ""
	// NodeLag answers from Slots slots ago.
	NodeLag NodeFaultKind = "lag"
	// NodeWrong answers a supply off by Delta base units.
	NodeWrong NodeFaultKind = "wrong"
	// NodeDown answers every request with HTTP 503.
	NodeDown NodeFaultKind = "down"
	// NodeBalancer alternates, request by request, between a current node
	// and one Slots slots behind.
	NodeBalancer NodeFaultKind = "lb"
	// NodeHide leaves the first Accounts token accounts of each mint out
	// of getProgramAccounts and getTokenAccounts: a node whose index lost
	// accounts, so that it counts fewer holders.
	NodeHide NodeFaultKind = "hide"
)

// NodeFault is one node's fault.
type NodeFault struct {
	Kind NodeFaultKind
	// Slots is the lag of NodeLag and of NodeBalancer's lagging node.
	Slots uint64
	// Delta is what NodeWrong adds to the supply (negative: removes).
	Delta int64
	// Accounts is how many token accounts of each mint NodeHide leaves out.
	Accounts int
	// Socket is the fault of the node's PubSub WebSocket, beside Kind
	// (which it leaves as it is: a lagging node's socket notifies its
	// lagged view). See SocketFault.
	Socket SocketFault
}

// DefaultWrongDelta is NodeWrong's Delta when "wrong" names none.
const DefaultWrongDelta = 12_345

// ParseNodeFault reads a fault as the simulate command takes it: "ok",
// "lag:K", "wrong" or "wrong:D" (D may be negative), "down", "lb:K",
// "hide:K", a socket fault ("ws-drop", "ws-stall", "ws-garble", "ws-off"),
// or a node fault and a socket fault joined by "+" ("lag:1000+ws-stall").
func ParseNodeFault(s string) (NodeFault, error) {
	var out NodeFault
	kinds, sockets := 0, 0
	for part := range strings.SplitSeq(s, "+") {
		if sf, ok := parseSocketFault(part); ok {
			out.Socket = sf
			sockets++
			continue
		}
		f, err := parseNodeKind(part)
		if err != nil {
			return NodeFault{}, err
		}
		f.Socket = out.Socket
		out = f
		kinds++
	}
	if kinds > 1 || sockets > 1 {
		return NodeFault{}, fmt.Errorf("%q: at most one node fault and one socket fault, as lag:1000+ws-stall", s)
	}
	return out, nil
}

// parseSocketFault reads a socket fault's name.
func parseSocketFault(s string) (SocketFault, bool) {
	switch f := SocketFault(s); f {
	case SocketDrop, SocketStall, SocketGarble, SocketOff:
		return f, true
	}
	return "", false
}

func parseNodeKind(s string) (NodeFault, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	switch NodeFaultKind(kind) {
	case "ok":
		if !hasArg {
			return NodeFault{}, nil
		}
	case NodeDown:
		if !hasArg {
			return NodeFault{Kind: NodeDown}, nil
		}
	case NodeLag, NodeBalancer:
		k, err := strconv.ParseUint(arg, 10, 64)
		if err != nil || k == 0 {
			return NodeFault{}, fmt.Errorf("%q: %s needs a number of slots above 0, as %s:1000", s, kind, kind)
		}
		return NodeFault{Kind: NodeFaultKind(kind), Slots: k}, nil
	case NodeWrong:
		if !hasArg {
			return NodeFault{Kind: NodeWrong, Delta: DefaultWrongDelta}, nil
		}
		d, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || d == 0 {
			return NodeFault{}, fmt.Errorf("%q: wrong takes a non-zero number of base units, as wrong:12345", s)
		}
		return NodeFault{Kind: NodeWrong, Delta: d}, nil
	case NodeHide:
		k, err := strconv.Atoi(arg)
		if err != nil || k <= 0 {
			return NodeFault{}, fmt.Errorf("%q: hide needs a number of token accounts above 0, as hide:10", s)
		}
		return NodeFault{Kind: NodeHide, Accounts: k}, nil
	}
	return NodeFault{}, fmt.Errorf("%q is not ok, lag:K, wrong[:D], down, lb:K, hide:K, ws-drop, ws-stall, ws-garble or ws-off", s)
}

// view is how a node departs from the ledger for one request.
type view struct {
	lag   uint64
	delta int64
	// hide is how many token accounts of each mint the node leaves out
	// of its account listings (NodeHide).
	hide int
}

type viewKey struct{}

func viewOf(ctx context.Context) view {
	v, _ := ctx.Value(viewKey{}).(view)
	return v
}

// skew is st as the node of v answers it: its supply off by delta.
func (v view) skew(st ledger.MintState) ledger.MintState {
	if v.delta != 0 {
		st.Supply = uint64(int64(st.Supply) + v.delta)
	}
	return st
}

// Node is one simulated ledger node over a Server's ledger.
type Node struct {
	srv   *Server
	fault atomic.Pointer[NodeFault]
	flip  atomic.Uint64
	// setMu orders SetFault and SetSocketFault.
	setMu   sync.Mutex
	sockets socketSet
	lis     listener
}

// NewNode returns a node over s's ledger, healthy until SetFault.
func (s *Server) NewNode() *Node {
	n := &Node{srv: s, lis: listener{name: "solanasim: node"}}
	n.fault.Store(&NodeFault{})
	return n
}

// SetFault sets the node's fault, its socket's included (NodeFault{}
// heals it). A socket fault acts at once on the open sockets (see
// SocketFault).
func (n *Node) SetFault(f NodeFault) {
	n.setMu.Lock()
	defer n.setMu.Unlock()
	n.setLocked(f)
}

func (n *Node) setLocked(f NodeFault) {
	old := n.fault.Swap(&f)
	if f.Socket != old.Socket || f.Kind == NodeDown {
		applySocketFault(&n.sockets, f.Socket)
	}
	if f.Kind == NodeDown {
		n.sockets.closeAll()
	}
}

// SetSocketFault sets the fault of the node's PubSub WebSocket alone
// (SocketOK heals it), leaving the node's other fault as it is.
func (n *Node) SetSocketFault(sf SocketFault) {
	n.setMu.Lock()
	defer n.setMu.Unlock()
	f := *n.fault.Load()
	f.Socket = sf
	n.setLocked(f)
}

// Sockets is the number of PubSub sockets open on the node.
func (n *Node) Sockets() int { return n.sockets.Len() }

// Fault returns the node's fault.
func (n *Node) Fault() NodeFault { return *n.fault.Load() }

// ServeHTTP answers as the node.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := n.Fault()
	if f.Kind != NodeDown && isUpgrade(r) && !strings.HasPrefix(r.URL.Path, ControlPrefix) {
		if f.Socket == SocketOff {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
			return
		}
		// A balancer pins a socket to one of its two nodes.
		lagging := f.Kind == NodeBalancer && n.flip.Add(1)%2 == 0
		n.srv.servePubSub(w, r, &n.sockets, func() view { return n.Fault().view(lagging) }, func() SocketFault { return n.Fault().Socket })
		return
	}
	if f.Kind == NodeDown {
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return
	}
	// A balancer alternates, request by request, between its two nodes.
	lagging := f.Kind == NodeBalancer && n.flip.Add(1)%2 == 0
	n.srv.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewKey{}, f.view(lagging))))
}

// view is how a node with fault f departs from the ledger; a balancer
// answers as its lagging node when lagging.
func (f NodeFault) view(lagging bool) view {
	switch f.Kind {
	case NodeLag:
		return view{lag: f.Slots}
	case NodeBalancer:
		if lagging {
			return view{lag: f.Slots}
		}
	case NodeWrong:
		return view{delta: f.Delta}
	case NodeHide:
		return view{hide: f.Accounts}
	}
	return view{}
}

// StartOn serves the node on host (empty: 127.0.0.1) and port (0: an
// ephemeral one) until ctx ends or Close, and returns its base URL.
func (n *Node) StartOn(ctx context.Context, host string, port int) (string, error) {
	return n.lis.start(ctx, host, port, n, n.Close)
}

// Close stops the node; it is safe to call more than once.
func (n *Node) Close() error { return n.lis.close(&n.sockets) }
