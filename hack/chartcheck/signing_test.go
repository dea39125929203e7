package chartcheck

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/testkit/sigcheck"
)

// signedPaths are the data paths whose answers the outside verifier
// checks through the cache tier: every one the API serves, plain-text
// supplies, static ones and a history series included.
var signedPaths = []string{
	"/api/total-supply", "/api/circulating-supply", "/api/max-supply", "/api/supply", "/api/coingecko-supply",
	"/api/price", "/api/holders", "/api/token-metadata", "/api/exchanges", "/api/market", "/api/market-data",
	"/api/market-pairs", "/api/history/price/24h",
}

// TestSignedThroughCacheTier runs the standalone binary with a signing
// key file (SIGNING_KEY_FILE, a PKCS#8 PEM as an operator makes it) behind
// the nginx config the chart renders, and has an implementation of RFC
// 9421 that is not ours (npm's http-message-signatures, run by Node:
// shared/testkit/sigcheck) verify what the tier serves: every data path,
// in each content coding the edge offers for it (identity always; gzip
// and br where the body is worth compressing), GET from the tier's cache
// (each variant fetched once before, so the verifier reads HITs) and
// HEAD. A changed byte of the body, a changed covered field, or a key set
// that is not /api/keys fails each of them.
func TestSignedThroughCacheTier(t *testing.T) {
	nginx := findNginx(t)
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "signing.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o400); err != nil {
		t.Fatal(err)
	}
	kid := thumbprint(pub)

	edge := startStandalone(t, "SIGNING_KEY_FILE="+keyFile)
	cache := startNginx(t, nginx, strings.TrimPrefix(edge.url, "http://"))
	keys := cache + "/api/keys"

	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	defer c.CloseIdleConnections()
	if r := fetchCoded(t, c, http.MethodGet, keys, nil, ""); r.status != 200 || !strings.Contains(string(r.body), `"kid":"`+kid+`"`) {
		t.Fatalf("GET /api/keys through the tier: %d %s; want the key %s", r.status, r.body, kid)
	}

	var cases []sigcheck.Case
	offered := map[string][]string{}
	for _, p := range signedPaths {
		var dated bool
		for _, enc := range []string{"identity", "gzip", "br"} {
			// Ask for this coding alone: the tier answers it when the
			// edge has it, identity otherwise (a small body, a plain-text
			// supply). Twice: the second is served from the tier's cache.
			var r codedReply
			for range 2 {
				r = fetchCoded(t, c, http.MethodGet, cache+p, []string{enc}, "")
			}
			got := r.encoding()
			if got == "" {
				got = "identity"
			}
			if r.status != 200 {
				t.Fatalf("GET %s (%s) through the tier: %d %s", p, enc, r.status, r.body)
			}
			if r.cache() != "HIT" {
				t.Errorf("GET %s (%s): X-Cache-Status %q on the second request, want HIT: the verifier would not read a cached answer", p, enc, r.cache())
			}
			if r.header.Get("Signature") == "" || r.header.Get("Signature-Input") == "" || r.header.Get("Content-Digest") == "" {
				t.Errorf("GET %s (%s) through the tier: no Signature, Signature-Input or Content-Digest: %v", p, enc, r.header)
			}
			if got != enc {
				continue // the edge does not send this coding for p
			}
			offered[p] = append(offered[p], enc)
			dated = r.header.Get("X-Data-Updated-At") != ""
			cases = append(cases, sigcheck.Case{URL: cache + p, KeysURL: keys, Encoding: enc})
			muts := []string{sigcheck.MutateBody, sigcheck.MutateHeader("content-type"), sigcheck.MutateHeader("content-digest"), sigcheck.MutateKey}
			if dated {
				muts = append(muts, sigcheck.MutateHeader("x-data-updated-at"))
			}
			for _, m := range muts {
				cases = append(cases, sigcheck.Case{URL: cache + p, KeysURL: keys, Encoding: enc, Mutate: m})
			}
		}
		cases = append(cases, sigcheck.Case{URL: cache + p, KeysURL: keys, Method: http.MethodHead})
		if len(offered[p]) == 0 || offered[p][0] != "identity" {
			t.Errorf("%s: codings %v, want identity at least", p, offered[p])
		}
	}
	// Not vacuous: the big bodies come compressed in both codings.
	for _, p := range []string{"/api/market-data", "/api/token-metadata", "/api/history/price/24h"} {
		if len(offered[p]) != 3 {
			t.Errorf("%s: codings %v through the tier, want identity, gzip and br", p, offered[p])
		}
	}
	t.Logf("codings offered: %v; %d cases", offered, len(cases))

	res := sigcheck.Expect(t, cases)
	for i, cs := range cases {
		if cs.Mutate == "" && res[i].OK && res[i].KeyID != kid {
			t.Errorf("%s: verified with key %s, want the key file's %s", cs, res[i].KeyID, kid)
		}
		if cs.Mutate != "" && !res[i].OK {
			t.Logf("%s refused: %s", cs, res[i].Reason)
		}
	}
}

// thumbprint is the RFC 7638 thumbprint of an Ed25519 public key (RFC
// 8037's OKP members in lexicographic order), computed here apart from the
// service's own code.
func thumbprint(pub ed25519.PublicKey) string {
	jwk := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(jwk))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
