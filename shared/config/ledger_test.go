package config

import (
	"strings"
	"testing"
)

// TestLedgerRPCs: SOLANA_RPC_URLS is a list of distinct http(s) URLs,
// refused beside SOLANA_RPC_URL, and each node's key is redacted.
func TestLedgerRPCs(t *testing.T) {
	c := Common{SolanaRPCURL: "https://one.example/?api-key=k3y0000001", SolanaRPCURLs: " https://a.example/?api-key=k3yAAAAAA1 , https://b.example/k3yBBBBBB2 "}
	nodes := c.LedgerRPCs()
	if len(nodes) != 2 || nodes[0] != "https://a.example/?api-key=k3yAAAAAA1" || c.HoldersRPC() != nodes[0] {
		t.Fatalf("nodes %q, holders %q", nodes, c.HoldersRPC())
	}
	if err := c.validateLedgerRPCs(); err != nil {
		t.Fatal(err)
	}
	msg := NewRedactor(SecretsOf(c)...).Redact("node 2 failed: https://b.example/k3yBBBBBB2 and k3yAAAAAA1")
	if strings.Contains(msg, "k3yBBBBBB2") || strings.Contains(msg, "k3yAAAAAA1") {
		t.Errorf("a node's key survives redaction: %s", msg)
	}
	for list, want := range map[string]string{
		"https://a.example,,https://b.example":                            "node 2 is empty",
		"https://a.example/?k=1,https://a.example/?k=1":                   "node 2 repeats node 1",
		"https://a.example,ftp://b.example":                               "node 2: not an absolute",
		strings.Repeat("https://a.example/x,", 9) + "https://a.example/y": "at most 9",
	} {
		err := Common{SolanaRPCURLs: Secret(list)}.validateLedgerRPCs()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "example") {
			t.Errorf("%q: %v, want %q and no URL", list, err, want)
		}
	}
	t.Setenv("SOLANA_RPC_URL", "https://one.example")
	t.Setenv("SOLANA_RPC_URLS", "https://a.example,https://b.example")
	if _, err := LoadCommon(); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("both set: %v", err)
	}
}

// TestLedgerWSs: SOLANA_WS_URLS defaults to each RPC URL with its scheme
// turned into ws(s), path and key kept; given, it has one element per
// node, each off or a ws(s) URL; its keys are redacted.
func TestLedgerWSs(t *testing.T) {
	c := Common{SolanaRPCURLs: "https://a.example/v2/k3yAAAAAA1,http://127.0.0.1:8899/?api-key=k3yBBBBBB2"}
	got := c.LedgerWSs()
	if len(got) != 2 || got[0] != "wss://a.example/v2/k3yAAAAAA1" || got[1] != "ws://127.0.0.1:8899/?api-key=k3yBBBBBB2" {
		t.Fatalf("derived: %q", got)
	}
	c.SolanaWSURLs = " off , wss://ws.example/?token=k3yCCCCCC3 "
	if err := c.validateLedgerWSs(); err != nil {
		t.Fatal(err)
	}
	if got := c.LedgerWSs(); got[0] != "" || got[1] != "wss://ws.example/?token=k3yCCCCCC3" {
		t.Fatalf("given: %q", got)
	}
	msg := NewRedactor(SecretsOf(c)...).Redact("dial wss://ws.example/?token=k3yCCCCCC3 and wss://a.example/v2/k3yAAAAAA1")
	if strings.Contains(msg, "k3yCCCCCC3") || strings.Contains(msg, "k3yAAAAAA1") {
		t.Errorf("a socket's key survives redaction: %s", msg)
	}
	for list, want := range map[string]string{
		"wss://a.example":                   "1 elements for 2 ledger node(s)",
		"wss://a.example,https://b.example": "node 2: not off nor",
		"wss://a.example,":                  "node 2: not off nor",
	} {
		err := Common{SolanaRPCURLs: c.SolanaRPCURLs, SolanaWSURLs: Secret(list)}.validateLedgerWSs()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "example") {
			t.Errorf("%q: %v, want %q and no URL", list, err, want)
		}
	}
	if got := (Common{SolanaRPCURL: "https://one.example"}).LedgerWSs(); len(got) != 1 || got[0] != "wss://one.example" {
		t.Errorf("one node: %q", got)
	}
}
