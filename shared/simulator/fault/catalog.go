package fault

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Info documents one kind: what it does and on which routes it means
// something.
type Info struct {
	Kind Kind
	// Doc says what the upstream does.
	Doc string
	// Routes are where the kind applies: "any" (every route of both
	// simulators), "rpc" (an RPC method or "*"), "dex" (dexscreener,
	// geckoterminal), or one route.
	Routes string
}

// Catalog is every kind, in the order a reader meets them.
var Catalog = []Info{
	{Latency, "answer normally after a delay (route=latency:2s); on route accountNotification, the notification sent late", "any"},
	{HTTP403, "HTTP 403: the gateway refuses the key or the method", "any"},
	{HTTP429, "HTTP 429 with Retry-After: 1", "any"},
	{HTTP500, "HTTP 500", "any"},
	{HTTP503, "HTTP 503", "any"},
	{Reset, "reset the TCP connection before any byte", "any"},
	{Truncate, "send the status and the first bytes of the body, then drop the connection (route=truncate:64)", "any"},
	{Malformed, "HTTP 200 with a body that is not valid JSON", "any"},
	{RPCNodeUnhealthy, "JSON-RPC -32005: the node is behind", "rpc"},
	{RPCExcludedIndex, "JSON-RPC -32010: the token program is excluded from the secondary indexes (a node that cannot enumerate by getProgramAccounts)", "rpc"},
	{RPCMethodNotFound, "JSON-RPC -32601: the node does not serve the method (getProgramAccounts, getTokenAccounts...)", "rpc"},
	{RPCInvalidParams, "JSON-RPC -32602: invalid params", "rpc"},
	{RPCKeyEcho, "JSON-RPC -32052 refusing the caller's API key and quoting it (bare, URL-encoded, in URLs)", "rpc"},
	{Lost, "a PubSub notification dropped without a word, the socket kept open (route programNotification or accountNotification)", "rpc"},
	{EndlessStream, "getProgramAccounts streams accounts until the client hangs up; getTokenAccounts pages without end", "rpc"},
	{HugeError, "a JSON-RPC error whose message is 8 MiB", "rpc"},
	{PairsEmpty, "DexScreener answers [] (the token is not indexed)", "dexscreener"},
	{PairsNull, "DexScreener answers null", "dexscreener"},
	{GeckoNotFound, "GeckoTerminal answers 404", "geckoterminal"},
	{HostileHTML, "extra pairs with markup in addresses, names and links", "dex"},
	{HostileHuge, "extra pairs with MiB-size names and over-long fields", "dex"},
	{HostileControl, "extra pairs with control characters, NUL, U+202E and invalid UTF-8", "dex"},
	{HostileNumbers, "extra pairs with absurd numbers (a 9e39 USD price, 9e20 USD liquidity)", "dex"},
	{RealWorldOdd, "extra pairs with honest odd values (1e-15 prices, liquidity 0 or absent)", "dex"},
}

// Lookup returns the catalog entry of kind k.
func Lookup(k Kind) (Info, bool) {
	for _, i := range Catalog {
		if i.Kind == k {
			return i, true
		}
	}
	return Info{}, false
}

// Spec is a fault on a route, as written on a command line:
// "route=kind[:param][*times]". param is the delay of latency ("2s") or the
// bytes truncate lets through ("64"); times is how many requests it applies
// to (every one when absent).
type Spec struct {
	Route string
	Fault Fault
}

// ParseSpec parses "route=kind[:param][*times]" and checks the kind
// exists. The route is not checked here: the simulator that serves it
// knows its routes.
func ParseSpec(s string) (Spec, error) {
	route, rest, ok := strings.Cut(s, "=")
	if !ok || route == "" || rest == "" {
		return Spec{}, fmt.Errorf("%q is not route=kind (getProgramAccounts=rpc_excluded_index, dexscreener=pairs_empty)", s)
	}
	var f Fault
	if body, times, ok := strings.Cut(rest, "*"); ok {
		n, err := strconv.Atoi(times)
		if err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("%q: times %q is not a positive number", s, times)
		}
		f.Times, rest = n, body
	}
	kind, param, hasParam := strings.Cut(rest, ":")
	f.Kind = Kind(kind)
	if handled, err := parseAggregator(&f, s, param, hasParam); handled {
		return Spec{Route: route, Fault: f}, err
	}
	if _, ok := Lookup(f.Kind); !ok {
		return Spec{}, fmt.Errorf("%q: unknown fault kind %q (simulate --help lists them)", s, kind)
	}
	switch {
	case hasParam && f.Kind == Latency:
		d, err := time.ParseDuration(param)
		if err != nil || d <= 0 {
			return Spec{}, fmt.Errorf("%q: the delay %q is not a positive duration", s, param)
		}
		f.Delay = d
	case hasParam && f.Kind == Truncate:
		n, err := strconv.Atoi(param)
		if err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("%q: %q is not a positive number of bytes", s, param)
		}
		f.AfterBytes = n
	case hasParam:
		return Spec{}, fmt.Errorf("%q: %s takes no parameter", s, f.Kind)
	case f.Kind == Latency:
		f.Delay = 2 * time.Second
	}
	return Spec{Route: route, Fault: f}, nil
}
