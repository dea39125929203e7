package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
)

// remedyGPA is the holders collector's remedy of a node that cannot
// enumerate (services/holders.RemedyGPA: the edge does not link it).
const remedyGPA = "use an RPC node that indexes token accounts by mint (secondary indexes), " +
	"or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL"

func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return e.Error.Message
}

// TestHoldersUnavailableKeepsTheRemedyWhole: the 503 of a node that
// cannot enumerate gives the collector's remedy whole, before the node's
// own (long) words, which alone are bounded.
func TestHoldersUnavailableKeepsTheRemedyWhole(t *testing.T) {
	h := newHarness(t, nil)
	st := contract.Status{Collector: contract.CollectorHolders, Runs: map[contract.Domain]contract.Run{
		contract.DomainHolders: {StartedAt: t0, FinishedAt: t0, ErrorKind: contract.ErrKindUnsupported, Upstream: contract.UpstreamSolanaRPC,
			Error:  "getProgramAccounts: the RPC node answered error -32010: " + strings.Repeat("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA excluded from account secondary indexes; ", 5),
			Remedy: remedyGPA},
	}}
	if err := h.store.WriteStatus(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	rec := h.do(http.MethodGet, view.PathHolders)
	msg := errorMessage(t, rec.Body.Bytes())
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(msg, "Use an RPC node that indexes token accounts by mint (secondary indexes), or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL.") {
		t.Errorf("%d: the remedy is not whole in %q", rec.Code, msg)
	}
	if !strings.Contains(msg, "The node said: getProgramAccounts: the RPC node answered error -32010") || !strings.HasSuffix(msg, "…") {
		t.Errorf("the node's words are missing or not bounded: %q", msg)
	}
}

// TestPermanentFailureDoesNotSayRetryLater: a domain that is missing
// because its collector fails in a way waiting does not cure (a wrong
// mint) says so, with the remedy, never "retry later"; one missing for a
// passing outage keeps "retry later".
func TestPermanentFailureDoesNotSayRetryLater(t *testing.T) {
	h := newHarness(t, nil)
	st := contract.Status{Collector: contract.CollectorSupply, Runs: map[contract.Domain]contract.Run{
		contract.DomainSupply: {StartedAt: t0, FinishedAt: t0, ErrorKind: contract.ErrKindConfig, Upstream: contract.UpstreamSolanaRPC,
			Error:  "getTokenSupply: the RPC node answered error -32602: Invalid param: could not find account",
			Remedy: "check the mint address (TOKEN_MINT, or mint in the token file): it must be the token's mint, and SOLANA_RPC_URL must serve the token's cluster (mainnet-beta)"},
	}}
	outage := contract.Status{Collector: contract.CollectorMarket, Runs: map[contract.Domain]contract.Run{
		contract.DomainMarket: {StartedAt: t0, FinishedAt: t0, ErrorKind: contract.ErrKindUnavailable, Upstream: contract.UpstreamDexScreener,
			Error: "dexscreener: no connection", Remedy: "check the endpoint; the collector tries again on its next poll"},
	}}
	if err := h.store.WriteStatus(context.Background(), outage); err != nil {
		t.Fatal(err)
	}
	if err := h.store.WriteStatus(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	for _, p := range []string{view.PathTotalSupply, view.PathSupply} {
		rec := h.do(http.MethodGet, p)
		msg := errorMessage(t, rec.Body.Bytes())
		if rec.Code != http.StatusServiceUnavailable || strings.Contains(msg, "retry later") ||
			!strings.Contains(msg, "(config_error)") || !strings.Contains(msg, "Check the mint address (TOKEN_MINT, or mint in the token file)") {
			t.Errorf("%s: %d %q", p, rec.Code, msg)
		}
	}
	rec := h.do(http.MethodGet, view.PathPrice)
	if msg := errorMessage(t, rec.Body.Bytes()); rec.Code != http.StatusServiceUnavailable || !strings.Contains(msg, "retry later") {
		t.Errorf("price during an outage: %d %q", rec.Code, msg)
	}
}
