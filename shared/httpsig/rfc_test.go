package httpsig_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/httpsig"
)

// The Ed25519 test key of RFC 9421 Appendix B.1.4.
const (
	rfcPrivatePEM = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
`
	rfcPublicX = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"
)

func rfcKey(t testing.TB) *httpsig.Key {
	t.Helper()
	k, err := httpsig.ParseKey([]byte(rfcPrivatePEM))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRFC9421B26 reproduces Appendix B.2.6 of RFC 9421: the test-request
// of Appendix B.2 signed with test-key-ed25519 over date, @method, @path,
// @authority, content-type and content-length. Ed25519 is deterministic,
// so the signature is the published one byte for byte.
func TestRFC9421B26(t *testing.T) {
	req, err := http.NewRequest(http.MethodPost, "http://example.com/foo?param=Value&Pet=dog", strings.NewReader(`{"hello": "world"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Date", "Tue, 20 Apr 2021 02:07:55 GMT")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Digest", "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:")
	req.Header.Set("Content-Length", "18")

	components := []string{"date", "@method", "@path", "@authority", "content-type", "content-length"}
	params, err := httpsig.SignatureParams(components, httpsig.Params{Created: 1618884473, KeyID: "test-key-ed25519"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`; params != want {
		t.Fatalf("signature params\n got %s\nwant %s", params, want)
	}
	base, err := httpsig.AppendBase(nil, components, params, httpsig.Request{R: req})
	if err != nil {
		t.Fatal(err)
	}
	wantBase := `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
	if string(base) != wantBase {
		t.Fatalf("signature base\n got %q\nwant %q", base, wantBase)
	}
	key := rfcKey(t)
	got := base64.StdEncoding.EncodeToString(key.Sign(base))
	const want = "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw=="
	if got != want {
		t.Fatalf("signature\n got %s\nwant %s", got, want)
	}
	if x := base64.RawURLEncoding.EncodeToString(key.Public()); x != rfcPublicX {
		t.Fatalf("public key x = %s, want %s (RFC 9421 B.1.4)", x, rfcPublicX)
	}
	// The request's Content-Digest is the RFC's sha-512 of its body.
	if err := httpsig.CheckContentDigest(req.Header.Get("Content-Digest"), []byte(`{"hello": "world"}`)); err != nil {
		t.Fatal(err)
	}
}

// TestThumbprintRFC8037 is Appendix A.3 of RFC 8037: the thumbprint of
// the Ed25519 key of its Appendix A.2.
func TestThumbprintRFC8037(t *testing.T) {
	x, err := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := httpsig.Thumbprint(ed25519.PublicKey(x)), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Fatalf("thumbprint %s, want %s", got, want)
	}
	// The private key of Appendix A.1 has that public key, and its id.
	d, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	if pub := ed25519.NewKeyFromSeed(d).Public().(ed25519.PublicKey); !bytes.Equal(pub, x) {
		t.Fatal("RFC 8037 A.1 seed does not give the A.2 public key")
	}
}

// TestContentDigestRFC9530 is the sha-256 example of RFC 9530 section 2.
func TestContentDigestRFC9530(t *testing.T) {
	body := []byte(`{"hello": "world"}`)
	if got, want := httpsig.ContentDigest(body), "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"; got != want {
		t.Fatalf("Content-Digest %s, want %s", got, want)
	}
}
