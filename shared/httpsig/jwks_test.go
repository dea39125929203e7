package httpsig_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/httpsig"
	"github.com/tokendata/tokendata/shared/testkit/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// rfc8037Public is the public key of RFC 8037 Appendix A.2.
func rfc8037Public(t testing.TB) ed25519.PublicKey {
	x, err := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestRenderJWKS(t *testing.T) {
	cur, prev := rfcKey(t).Public(), rfc8037Public(t)
	body, err := httpsig.RenderJWKS(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "jwks", body, *update)
	alone, err := httpsig.RenderJWKS(cur, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "jwks-current-only", alone, *update)

	set, err := httpsig.ParseJWKS(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 2 || !set[httpsig.Thumbprint(cur)].Equal(cur) || !set["kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"].Equal(prev) {
		t.Fatalf("parsed set %v", set)
	}
	only, err := set.Only(httpsig.Thumbprint(prev))
	if err != nil || len(only) != 1 {
		t.Fatalf("Only: %v %v", only, err)
	}
	if _, err := set.Only("nope"); !errors.Is(err, httpsig.ErrUnknownKey) {
		t.Fatalf("Only of an absent thumbprint: %v", err)
	}
	if _, err := httpsig.RenderJWKS(ed25519.PublicKey{1, 2}); err == nil {
		t.Fatal("a short key was rendered")
	}
}

func TestParseJWKSRefuses(t *testing.T) {
	x := base64.RawURLEncoding.EncodeToString(rfcKey(t).Public())
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{"keys":`, "not a JSON key set"},
		{"empty", `{"keys":[]}`, "no Ed25519 key"},
		{"only RSA", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, "no Ed25519 key"},
		{"short x", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}`, "32 bytes"},
		{"kid not thumbprint", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"test-key-ed25519"}]}`, "is not the key's thumbprint"},
		{"too large", `{"keys":[` + strings.Repeat(" ", 70<<10) + `]}`, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpsig.ParseJWKS([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// A key without kid is taken under its thumbprint; other kinds are skipped.
	set, err := httpsig.ParseJWKS([]byte(`{"keys":[{"kty":"EC","crv":"P-256"},{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`))
	if err != nil || len(set) != 1 || set[rfcKey(t).ID()] == nil {
		t.Fatalf("set %v, err %v", set, err)
	}
}
