package collector_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// TestOneRemedyPerKind: every kind an upstream can cause has a remedy that
// names the endpoint's variable, and only the kinds tried again say that
// the collector tries again.
func TestOneRemedyPerKind(t *testing.T) {
	for _, kind := range []string{contract.ErrKindUnavailable, contract.ErrKindRateLimited, contract.ErrKindForbidden,
		contract.ErrKindNodeBehind, contract.ErrKindInvalid, contract.ErrKindRPC} {
		r := collector.RemedyFor(kind, "SOLANA_RPC_URL")
		if !strings.Contains(r, "SOLANA_RPC_URL") {
			t.Errorf("%s: remedy %q does not name the variable", kind, r)
		}
	}
	for _, kind := range []string{contract.ErrKindConfig, contract.ErrKindUnsupported, contract.ErrKindTooLarge, contract.ErrKindInternal} {
		if r := collector.RemedyFor(kind, "X"); r != "" {
			t.Errorf("%s: a generic remedy %q where only the failure can say", kind, r)
		}
	}
	e := &collector.Error{Kind: contract.ErrKindForbidden, Remedy: "own"}
	if e.WithRemedy("X").Remedy != "own" {
		t.Error("WithRemedy replaced a remedy")
	}
}

// TestClassifyRPC: the JSON-RPC codes every collector meets, mapped once.
func TestClassifyRPC(t *testing.T) {
	for _, tc := range []struct {
		code  int64
		msg   string
		kind  string
		retry bool
	}{
		{-32005, "Node is behind by 42 slots", contract.ErrKindNodeBehind, true},
		{429, "Too many requests", contract.ErrKindRateLimited, true},
		{403, "Forbidden", contract.ErrKindForbidden, false},
		{-32601, "Method not found", contract.ErrKindRPC, false},
		{-32602, "Invalid param: could not find account", contract.ErrKindConfig, false},
		{-32602, "Invalid param: not a Token mint", contract.ErrKindConfig, false},
		{-32602, "Invalid params: invalid type", contract.ErrKindRPC, false},
		{-32603, "Internal error", contract.ErrKindRPC, true},
		{-32016, "Minimum context slot has not been reached", contract.ErrKindRPC, true},
		{-32052, "api key not allowed", contract.ErrKindRPC, false},
	} {
		e := collector.ClassifyRPC("getTokenSupply", tc.code, tc.msg, "SOLANA_RPC_URL")
		if e.Kind != tc.kind || e.Retry != tc.retry || e.Remedy == "" || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%d %q: %+v, want %s retry=%v with a remedy", tc.code, tc.msg, e, tc.kind, tc.retry)
		}
		if !e.Retry && strings.Contains(e.Remedy, "tries again") {
			t.Errorf("%d: a permanent failure says it is tried again: %q", tc.code, e.Remedy)
		}
	}
	long := strings.Repeat("é", 400)
	if e := collector.ClassifyRPC("m", -1, long, "V"); len(e.Message) > 200 {
		t.Errorf("a node's long message is kept whole: %d bytes", len(e.Message))
	}
}

// TestUnreachableNamesVariableAndHost: a connection failure names the
// variable and the host, with what looks like a key masked, and says why.
func TestUnreachableNamesVariableAndHost(t *testing.T) {
	ep := config.Secret("https://mainnet.helius-rpc.com/?api-key=abcdef-123456")
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	e := collector.Unreachable("getTokenSupply", "SOLANA_RPC_URL", ep, refused, false, 0, "SUPPLY_RPC_TIMEOUT")
	if e.Kind != contract.ErrKindUnavailable || !e.Retry ||
		e.Message != "getTokenSupply: no connection to the endpoint of SOLANA_RPC_URL (host mainnet.helius-rpc.com): connection refused" ||
		!strings.Contains(e.Remedy, "mainnet.helius-rpc.com is reachable") {
		t.Errorf("%+v", e)
	}
	dns := &net.DNSError{Err: "no such host", Name: "x"}
	if e := collector.Unreachable("m", "V", ep, dns, false, 0, "T"); !strings.HasSuffix(e.Message, "the host name does not resolve") {
		t.Errorf("dns: %q", e.Message)
	}
	e = collector.Unreachable("m", "HOLDERS_RPC_URL", ep, context.DeadlineExceeded, true, 5*time.Second, "HOLDERS_RPC_TIMEOUT")
	if !strings.Contains(e.Message, "did not answer within 5s (HOLDERS_RPC_TIMEOUT)") || !strings.Contains(e.Remedy, "raise HOLDERS_RPC_TIMEOUT") {
		t.Errorf("timeout: %+v", e)
	}
	keyHost := config.Secret("https://k3yk3yk3y42.solana-mainnet.rpc.example/")
	if h := collector.Host(keyHost); h != "[redacted].solana-mainnet.rpc.example" {
		t.Errorf("Host = %q", h)
	}
	for _, text := range []string{e.Message, e.Remedy} {
		if strings.Contains(text, "abcdef-123456") || strings.Contains(text, "api-key") {
			t.Errorf("the key leaked: %q", text)
		}
	}
	if errors.Is(e, context.DeadlineExceeded) {
		t.Error("the error wraps the transport's (which quotes the URL)")
	}
}

// TestMintErrorsAreConfiguration: a mint the ledger does not know is the
// same configuration error, with the same remedy, in every collector.
func TestMintErrorsAreConfiguration(t *testing.T) {
	a := collector.MintNotFound("getAccountInfo", "M", "HOLDERS_RPC_URL")
	b := collector.NotAMint("getAccountInfo", "M", "11111111111111111111111111111111", "SOLANA_RPC_URL")
	c := collector.ClassifyRPC("getTokenSupply", -32602, "Invalid param: could not find account", "SOLANA_RPC_URL")
	for _, e := range []*collector.Error{a, b, c} {
		if e.Kind != contract.ErrKindConfig || e.Retry || !strings.HasPrefix(e.Remedy, "check the mint address (TOKEN_MINT, or mint in the token file)") {
			t.Errorf("%+v", e)
		}
	}
}
