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
