package edge

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// writeStatus stores a failed run of collector for domain d with the
// given texts.
func (h *harness) writeStatus(collector string, d contract.Domain, errText, remedy, note string) {
	h.t.Helper()
	at := h.clock.Now()
	st := contract.Status{Collector: collector, Runs: map[contract.Domain]contract.Run{d: {
		StartedAt: at.Add(-1e9), FinishedAt: at, Upstream: contract.UpstreamSolanaRPC,
		ErrorKind: contract.ErrKindRPC, Error: errText, Remedy: remedy, Note: note, ConsecutiveFailures: 1}}}
	if err := h.store.WriteStatus(context.Background(), st); err != nil {
		h.t.Fatal(err)
	}
}

// TestStatusMasksConfiguredKeys: a status record that quotes the keys of
// the configured URLs — bare, URL-encoded, hex-encoded, inside a longer
// URL — is served without them. The keys hold no digit, so the
// credential filter alone would miss the bare ones: this is the
// redaction of the configured secrets at work.
func TestStatusMasksConfiguredKeys(t *testing.T) {
	const (
		queryKey = "Provider/Key+Of=Edge&More"
		pathKey  = "AbCdEfGhIjKlMnOpQrSt"
	)
	h := newHarness(t, nil, func(c *config.Common, _ *Config, _ *Deps) {
		c.SolanaRPCURL = config.Secret("https://rpc.example/?api-key=" + url.QueryEscape(queryKey))
		c.HoldersRPCURL = config.Secret("https://das.example/v2/" + pathKey)
	})
	h.writeAll()
	for _, k := range []struct {
		collector string
		d         contract.Domain
		key       string
	}{{contract.CollectorSupply, contract.DomainSupply, queryKey}, {contract.CollectorHolders, contract.DomainHolders, pathKey}} {
		h.writeStatus(k.collector, k.d,
			"api key "+k.key+" is not allowed (key "+url.QueryEscape(k.key)+")",
			"see http://proxy.invalid/fwd?to=https%3a%2f%2fnode%2f"+strings.ToLower(url.QueryEscape(k.key))+" for "+url.PathEscape(k.key),
			"the node said: "+k.key)
	}
	h.refresh()
	for _, p := range []string{view.PathStatus, view.PathHolders} {
		body := h.do(http.MethodGet, p).Body.String()
		for _, key := range []string{queryKey, pathKey} {
			for _, form := range []string{key, url.QueryEscape(key), url.PathEscape(key)} {
				if strings.Contains(strings.ToLower(body), strings.ToLower(form)) {
					t.Errorf("%s quotes %q: %s", p, form, body)
				}
			}
		}
	}
	if body := h.do(http.MethodGet, view.PathStatus).Body.String(); !strings.Contains(body, "api key [redacted] is not allowed") {
		t.Errorf("the message lost its meaning: %s", body)
	}
}

// TestCredentialFilter: text from a status record is served without
// anything shaped like a credential, even when this edge does not know
// the secret; the token's public addresses and ordinary sentences stay.
func TestCredentialFilter(t *testing.T) {
	h := newHarness(t, nil)
	tok := edgetest.Token()
	for _, tc := range []struct{ in, secret string }{
		{"rejected api-key=K3yValue_987 for this plan", "K3yValue_987"},
		{`{"apikey": "K3yValue_987"}`, "K3yValue_987"},
		{"sent apikey%3DK3yValue_987 upstream", "K3yValue_987"},
		{"token=abcdef0123&x=1", "abcdef0123"},
		{"access_token: tok3nvalue, retry", "tok3nvalue"},
		{"password=hunter2hunter", "hunter2hunter"},
		{"Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"},
		{"header Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig was refused", "eyJhbGciOiJIUzI1NiJ9"},
		{"dial admin:s3cretpw@cache.internal:6379 failed", "s3cretpw"},
		{"api key 5f2b9c1e is not allowed", "5f2b9c1e"},
		{"API key `a1b2c3d4e5` expired", "a1b2c3d4e5"},
		{"key 9b2f6c1e-3d4a-4b8e-9f1a-2c3d4e5f6a7b is unknown", "9b2f6c1e-3d4a-4b8e-9f1a-2c3d4e5f6a7b"},
		{"hex 0123456789abcdef0123456789abcdef refused", "0123456789abcdef0123456789abcdef"},
		{"base58 5KQwrPbwdL6PhXujxW37FSSQZ1JiwsST4cqQzDeyXtP7 refused", "5KQwrPbwdL6PhXujxW37FSSQZ1JiwsST4cqQzDeyXtP7"},
		{"via https%3A%2F%2Frpc.example%2F%3Fx%3DK3yValue_987 now", "K3yValue_987"},
		{"via https://rpc.example/v2/K3yValue_987 now", "K3yValue_987"},
	} {
		got := h.srv.Redact(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("redact(%q) = %q", tc.in, got)
		}
	}
	for _, keep := range []string{
		"getAccountInfo: the mint account " + tok.Mint + " does not exist on the RPC node's ledger",
		"Official pair " + edgetest.PairSOL + " is not listed",
		"getProgramAccounts: the RPC node answered error -32010: " + contract.ProgramIDToken + " excluded from account secondary indexes; this RPC method unavailable for key (it cannot enumerate the token's accounts)",
		"check the API key or plan of the SOLANA_RPC_URL endpoint",
		"API key required",
		"the mint account is not owned by a token program",
		"set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL",
		"HOLDERS_REFRESH/HOLDERS_STALE_AFTER/HOLDERS_TTL: ttl below twice the refresh",
		"getTokenSupply: solana-rpc refused the request (HTTP 403)",
	} {
		if got := h.srv.Redact(keep); got != keep {
			t.Errorf("redact(%q) = %q: ordinary text changed", keep, got)
		}
	}

	// Through /api/status: the filter applies to what the edge serves.
	h.writeAll()
	h.writeStatus(contract.CollectorHolders, contract.DomainHolders,
		"getProgramAccounts: the RPC node answered error -32052: api key 5f2b9c1e-77aa-4c2d-9e01-a1b2c3d4e5f6 is not allowed",
		"rotate token=abc123def456", "")
	h.refresh()
	body := h.do(http.MethodGet, view.PathStatus).Body.String()
	for _, bad := range []string{"5f2b9c1e", "abc123def456"} {
		if strings.Contains(body, bad) {
			t.Errorf("/api/status quotes %q: %s", bad, body)
		}
	}
}
