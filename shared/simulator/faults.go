package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/shared/simulator/dexsim"
	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
)

// FaultsControl is the control operation (under solanasim.ControlPrefix,
// on the RPC port) that sets and clears faults while the simulator runs,
// as `standalone simulate --fault` sets them at its start:
//
//	POST   /_simulator/faults?set=<spec>[&set=<spec>…]  sets each fault
//	DELETE /_simulator/faults                           clears every fault
//
// A spec is route=kind[:param][*times] (an RPC method, a PubSub
// subscription, * for every RPC request, dexscreener or geckoterminal) or
// nodeN=kind (a ledger node of Options.Nodes). POST checks every spec
// before it sets any: a bad one answers 400 with why and sets none. Both
// answer 200 {"set":["<spec>",…]} (the specs just set; none for DELETE);
// any other method 405. A set replaces the fault its route had.
const FaultsControl = "faults"

// NodeFaultSpec is one nodeN=kind: the fault of ledger node N.
type NodeFaultSpec struct {
	Node  int
	Fault solanasim.NodeFault
}

// ParseNodeFaultSpec reads "nodeN=kind" (kind as solanasim.ParseNodeFault
// takes it: ok, lag:K, wrong[:D], down, lb:K, hide:K and the socket
// faults); isNode is false when v names no node (another fault).
func ParseNodeFaultSpec(v string) (spec NodeFaultSpec, isNode bool, err error) {
	route, kind, found := strings.Cut(v, "=")
	num, node := strings.CutPrefix(route, "node")
	if !found || !node {
		return NodeFaultSpec{}, false, nil
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > MaxNodes {
		return NodeFaultSpec{}, true, fmt.Errorf("%s: the node is node1 to node%d", v, MaxNodes)
	}
	f, err := solanasim.ParseNodeFault(kind)
	if err != nil {
		return NodeFaultSpec{}, true, fmt.Errorf("%s: %w", v, err)
	}
	return NodeFaultSpec{Node: n, Fault: f}, true, nil
}

// InjectFault sets f on the simulator that serves its route: the RPC
// server (an RPC method, a PubSub subscription, *) or the aggregators
// (dexscreener, geckoterminal). A kind that means nothing on its route,
// or an unknown route, is an error and sets nothing.
func (s *Sim) InjectFault(f fault.Spec) error {
	set, err := s.faultsOf(f)
	if err != nil {
		return err
	}
	set.Inject(f.Route, f.Fault)
	return nil
}

// faultsOf returns the fault table that serves f's route, or why f means
// nothing there.
func (s *Sim) faultsOf(f fault.Spec) (*fault.Set, error) {
	info, _ := fault.Lookup(f.Fault.Kind)
	switch f.Route {
	case dexsim.RouteDexScreener, dexsim.RouteGeckoTerminal:
		if info.Routes == "rpc" {
			return nil, fmt.Errorf("%s=%s: a JSON-RPC fault, for an RPC method or *", f.Route, f.Fault.Kind)
		}
		if (info.Routes == dexsim.RouteDexScreener || info.Routes == dexsim.RouteGeckoTerminal) && info.Routes != f.Route {
			return nil, fmt.Errorf("%s=%s: a fault of route %s", f.Route, f.Fault.Kind, info.Routes)
		}
		return s.Dex.Faults(), nil
	}
	if info.Routes == "dex" || info.Routes == dexsim.RouteDexScreener || info.Routes == dexsim.RouteGeckoTerminal {
		return nil, fmt.Errorf("%s=%s: a fault of the aggregators, for dexscreener or geckoterminal", f.Route, f.Fault.Kind)
	}
	if f.Route != "*" && !solanasim.Serves(f.Route) {
		return nil, errors.New(f.Route + "=" + string(f.Fault.Kind) + ": unknown route " + strconv.Quote(f.Route) +
			" (an RPC method such as getProgramAccounts, a PubSub subscription such as programSubscribe, * for every RPC request, dexscreener, geckoterminal or nodeN)")
	}
	return s.RPC.Faults(), nil
}

// SetNodeFault sets the fault of ledger node nf.Node.
func (s *Sim) SetNodeFault(nf NodeFaultSpec) error {
	if nf.Node < 1 || nf.Node > len(s.Nodes) {
		return fmt.Errorf("node%d: there are %d ledger nodes (Options.Nodes, --nodes)", nf.Node, len(s.Nodes))
	}
	s.Nodes[nf.Node-1].SetFault(nf.Fault)
	return nil
}

// ClearFaults removes every fault: the RPC server's, the aggregators' and
// each ledger node's.
func (s *Sim) ClearFaults() {
	s.RPC.Faults().ClearAll()
	s.Dex.Faults().ClearAll()
	for _, n := range s.Nodes {
		n.SetFault(solanasim.NodeFault{})
	}
}

// serveFaults answers FaultsControl.
func (s *Sim) serveFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		s.ClearFaults()
		writeSet(w, []string{})
	case http.MethodPost:
		specs := r.URL.Query()["set"]
		if len(specs) == 0 {
			http.Error(w, "set: at least one fault, route=kind (dexscreener=down, getProgramAccounts=rpc_excluded_index, node2=lag:50)", http.StatusBadRequest)
			return
		}
		var apply []func() error
		for _, v := range specs {
			nf, isNode, err := ParseNodeFaultSpec(v)
			if isNode {
				if err == nil && nf.Node > len(s.Nodes) {
					err = fmt.Errorf("%s: there are %d ledger nodes", v, len(s.Nodes))
				}
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				apply = append(apply, func() error { return s.SetNodeFault(nf) })
				continue
			}
			f, err := fault.ParseSpec(v)
			if err == nil {
				_, err = s.faultsOf(f)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			apply = append(apply, func() error { return s.InjectFault(f) })
		}
		for _, a := range apply {
			if err := a(); err != nil { // checked above: not expected
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		writeSet(w, specs)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "POST ?set=<route=kind> or DELETE", http.StatusMethodNotAllowed)
	}
}

func writeSet(w http.ResponseWriter, specs []string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string][]string{"set": specs})
}
