package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/httpsig"
)

// signedSupply serves /api/keys and a signed /api/total-supply, whose
// body is changed after signing when tamper is set.
func signedSupply(t *testing.T, key *httpsig.Key, tamper bool) *httptest.Server {
	t.Helper()
	jwks, err := httpsig.RenderJWKS(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := httpsig.NewSigner(key, httpsig.Label, httpsig.DefaultComponents)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("999999999.123456789")
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Data-Updated-At", "2025-06-01T11:59:30.000Z")
	h.Set("Content-Digest", httpsig.ContentDigest(body))
	sig, err := signer.SignResponse(http.StatusOK, h, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	sig.Set(h)
	if tamper {
		body = []byte("999999999.123456788")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/keys":
			w.Header().Set("Content-Type", "application/jwk-set+json")
			_, _ = w.Write(jwks)
		case "/api/total-supply":
			for k, v := range h {
				w.Header()[k] = v
			}
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVerify(t *testing.T) {
	key, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	good := signedSupply(t, key, false).URL + "/api/total-supply"
	bad := signedSupply(t, key, true).URL + "/api/total-supply"
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"verified", []string{"verify", good}, 0, []string{"trusting every published key", "identity  ok", "signed by key " + key.ID(), "VERIFIED"}},
		{"pinned, flags after the URL", []string{"verify", good, "--thumbprint", key.ID(), "--encodings", "identity"}, 0, []string{"only the pinned thumbprint " + key.ID(), "VERIFIED"}},
		{"pinned, flags before the URL", []string{"verify", "--thumbprint=" + key.ID(), good}, 0, []string{"VERIFIED"}},
		{"another thumbprint", []string{"verify", good, "--thumbprint", "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"}, 1, []string{"keys      FAIL unknown key: no published key has the thumbprint"}},
		{"body changed after signing", []string{"verify", bad}, 1, []string{"identity  FAIL content digest mismatch", "NOT VERIFIED"}},
		{"keys elsewhere", []string{"verify", good, "--keys", good}, 1, []string{"keys      FAIL published keys at " + good + ": JWKS: not a JSON key set"}},
		{"no URL", []string{"verify"}, 1, nil},
		{"not a URL", []string{"verify", "data.example.org/api/total-supply"}, 1, nil},
		{"unknown encoding", []string{"verify", good, "--encodings", "zstd"}, 1, nil},
		{"two URLs", []string{"verify", good, good}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, context.Background(), tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.out {
				if !strings.Contains(stdout, w) {
					t.Fatalf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if tc.code != 0 && tc.out == nil && !strings.Contains(stderr, "standalone verify: ") {
				t.Fatalf("stderr does not say what was wrong: %q", stderr)
			}
		})
	}
	code, stdout, _ := run(t, context.Background(), "verify", "--help")
	if code != 0 || !strings.Contains(stdout, "--thumbprint") || !strings.Contains(stdout, "standalone verify [flags] URL") {
		t.Fatalf("verify --help: exit %d\n%s", code, stdout)
	}
}
