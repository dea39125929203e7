package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The ledger nodes: SOLANA_RPC_URLS and their PubSub URLs, SOLANA_WS_URLS.

// MaxLedgerNodes bounds SOLANA_RPC_URLS: every poll reads each node.
const MaxLedgerNodes = 9

// LedgerRPCs returns the ledger nodes, in configuration order (node 1
// first): the elements of SOLANA_RPC_URLS, trimmed, or the one node of
// SOLANA_RPC_URL when the list is empty. A Common built in code that sets
// both takes the list (LoadCommon refuses both from the environment).
func (c Common) LedgerRPCs() []Secret {
	if strings.TrimSpace(c.SolanaRPCURLs.Reveal()) == "" {
		return []Secret{c.SolanaRPCURL}
	}
	var out []Secret
	for part := range strings.SplitSeq(c.SolanaRPCURLs.Reveal(), ",") {
		out = append(out, Secret(strings.TrimSpace(part)))
	}
	return out
}

// WSOff is the SOLANA_WS_URLS element of a node without a subscription.
const WSOff = "off"

// LedgerWSs returns the PubSub WebSocket URL of each ledger node, in the
// order of LedgerRPCs: the elements of SOLANA_WS_URLS, trimmed, an
// element "off" as "" (no subscription), or, when the list is empty, each
// RPC URL with its scheme turned into ws(s) (DeriveWS).
func (c Common) LedgerWSs() []Secret {
	rpcs := c.LedgerRPCs()
	out := make([]Secret, len(rpcs))
	if strings.TrimSpace(c.SolanaWSURLs.Reveal()) == "" {
		for i, r := range rpcs {
			out[i] = DeriveWS(r)
		}
		return out
	}
	i := 0
	for part := range strings.SplitSeq(c.SolanaWSURLs.Reveal(), ",") {
		if i == len(out) {
			break // validateLedgerWSs refuses the count
		}
		if p := strings.TrimSpace(part); !strings.EqualFold(p, WSOff) {
			out[i] = Secret(p)
		}
		i++
	}
	return out
}

// DeriveWS is the PubSub URL providers publish beside an RPC URL: https
// becomes wss and http ws, host, path and query (the key) unchanged; ""
// when rpc is not an http(s) URL.
func DeriveWS(rpc Secret) Secret {
	v := rpc.Reveal()
	switch {
	case strings.HasPrefix(v, "https://"):
		return Secret("wss://" + strings.TrimPrefix(v, "https://"))
	case strings.HasPrefix(v, "http://"):
		return Secret("ws://" + strings.TrimPrefix(v, "http://"))
	}
	return ""
}

// validateLedgerWSs checks SOLANA_WS_URLS: one element per ledger node,
// each off or a ws(s):// URL, naming the node by its number.
func (c Common) validateLedgerWSs() error {
	if strings.TrimSpace(c.SolanaWSURLs.Reveal()) == "" {
		return nil
	}
	parts := strings.Split(c.SolanaWSURLs.Reveal(), ",")
	if n := len(c.LedgerRPCs()); len(parts) != n {
		return fmt.Errorf("SOLANA_WS_URLS: %d elements for %d ledger node(s): give one per node, in the order of SOLANA_RPC_URLS (off for a node without a WebSocket)", len(parts), n)
	}
	var errs []error
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if strings.EqualFold(p, WSOff) {
			continue
		}
		u, err := url.Parse(p)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("SOLANA_WS_URLS: node %d: not off nor an absolute ws:// or wss:// URL", i+1))
		}
	}
	return errors.Join(errs...)
}

// validateLedgerRPCs checks SOLANA_RPC_URLS element by element, naming the
// node by its number, never quoting it.
func (c Common) validateLedgerRPCs() error {
	if c.SolanaRPCURLs == "" {
		return nil
	}
	nodes := c.LedgerRPCs()
	var errs []error
	if len(nodes) > MaxLedgerNodes {
		errs = append(errs, fmt.Errorf("SOLANA_RPC_URLS: %d nodes; at most %d", len(nodes), MaxLedgerNodes))
	}
	seen := map[Secret]int{}
	for i, n := range nodes {
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("SOLANA_RPC_URLS: node %d is empty (a stray comma?)", i+1))
			continue
		case seen[n] != 0:
			errs = append(errs, fmt.Errorf("SOLANA_RPC_URLS: node %d repeats node %d: the same node cannot confirm a figure twice", i+1, seen[n]))
			continue
		}
		seen[n] = i + 1
		if err := checkHTTPURL(n.Reveal()); err != nil {
			errs = append(errs, fmt.Errorf("SOLANA_RPC_URLS: node %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}
