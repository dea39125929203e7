package httpsig_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/tokendata/tokendata/shared/httpsig"
	"github.com/tokendata/tokendata/shared/testkit/sigcheck"
)

// variant is one rendered, signed encoding of an answer.
type variant struct {
	hdr  http.Header
	body []byte
}

// signedServer is a loopback server whose answers are rendered and signed
// once, per encoding, as the edge does: the signature step of a render.
type signedServer struct {
	*httptest.Server
	answers map[string]map[string]variant // path, encoding
}

func encode(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch enc {
	case "identity":
		return append([]byte(nil), body...)
	case "gzip":
		w := gzip.NewWriter(&b)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case "br":
		w := brotli.NewWriterLevel(&b, 5)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func newSignedServer(t *testing.T, jwks []byte) *signedServer {
	s := &signedServer{answers: map[string]map[string]variant{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs, ok := s.answers[r.URL.Path]
		if r.URL.Path == "/api/keys" {
			w.Header().Set("Content-Type", "application/jwk-set+json")
			_, _ = w.Write(jwks)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		enc := "identity"
		if ae := r.Header.Get("Accept-Encoding"); strings.Contains(ae, "br") {
			enc = "br"
		} else if strings.Contains(ae, "gzip") {
			enc = "gzip"
		}
		v := vs[enc]
		for k, vv := range v.hdr {
			w.Header()[k] = vv
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(v.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// add renders path's answer in every encoding, signed by signer.
func (s *signedServer) add(t *testing.T, path, contentType string, body []byte, signer *httpsig.Signer) {
	s.answers[path] = map[string]variant{}
	for _, enc := range []string{"identity", "gzip", "br"} {
		b := encode(t, enc, body)
		h := http.Header{}
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("Vary", "Accept-Encoding")
		h.Set("X-Data-Updated-At", "2025-06-01T11:59:30.000Z")
		h.Set("Content-Length", strconv.Itoa(len(b)))
		if enc != "identity" {
			h.Set("Content-Encoding", enc)
		}
		h.Set("Content-Digest", httpsig.ContentDigest(b))
		sig, err := signer.SignResponse(http.StatusOK, h, t0)
		if err != nil {
			t.Fatal(err)
		}
		sig.Set(h)
		s.answers[path][enc] = variant{hdr: h, body: b}
	}
}

// TestOutsideVerifier has npm's http-message-signatures, run by Node,
// verify answers signed here, in identity, gzip and br, and refuse each
// of them once a byte of the body or of a covered field is changed, or
// when the key that signed is not among the published ones.
func TestOutsideVerifier(t *testing.T) {
	cur, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	prev, rogue := rfcKey(t), mustGenerate(t)
	jwks, err := httpsig.RenderJWKS(cur.Public(), prev.Public())
	if err != nil {
		t.Fatal(err)
	}
	srv := newSignedServer(t, jwks)
	text, js := "text/plain; charset=utf-8", "application/json; charset=utf-8"
	supply := []byte("999999999.123456789")
	price := []byte(`{"price_usd":0.00000123,"updated_at":"2025-06-01T11:59:30.000Z","stale":false}`)
	srv.add(t, "/api/total-supply", text, supply, newSigner(t, cur))
	srv.add(t, "/api/price", js, price, newSigner(t, cur))
	srv.add(t, "/previous/price", js, price, newSigner(t, prev))
	srv.add(t, "/rogue/total-supply", text, supply, newSigner(t, rogue))
	keys := srv.URL + "/api/keys"

	var cases []sigcheck.Case
	for _, p := range []string{"/api/total-supply", "/api/price", "/previous/price"} {
		for _, enc := range []string{"identity", "gzip", "br"} {
			for _, m := range []string{"", sigcheck.MutateBody, sigcheck.MutateHeader("x-data-updated-at"),
				sigcheck.MutateHeader("content-type"), sigcheck.MutateHeader("content-digest"), sigcheck.MutateKey} {
				cases = append(cases, sigcheck.Case{URL: srv.URL + p, KeysURL: keys, Encoding: enc, Mutate: m})
			}
			cases = append(cases, sigcheck.Case{URL: srv.URL + p, KeysURL: keys, Encoding: enc, Method: http.MethodHead})
		}
	}
	res := sigcheck.Expect(t, cases)
	for i, c := range cases {
		if c.Mutate == "" && res[i].OK {
			want := cur.ID()
			if strings.HasPrefix(c.URL, srv.URL+"/previous/") {
				want = prev.ID()
			}
			if res[i].KeyID != want {
				t.Errorf("%s: verified with key %s, want %s", c, res[i].KeyID, want)
			}
		}
		if c.Mutate == sigcheck.MutateKey && !strings.Contains(res[i].Reason, "unknown key") {
			t.Errorf("%s: refused for %q, want unknown key", c, res[i].Reason)
		}
		if c.Mutate == sigcheck.MutateBody && !strings.Contains(res[i].Reason, "digest mismatch") {
			t.Errorf("%s: refused for %q, want a digest mismatch", c, res[i].Reason)
		}
	}

	// A key that is not published signed this one: refused, unmutated.
	rogueRes := sigcheck.Run(t, []sigcheck.Case{{URL: srv.URL + "/rogue/total-supply", KeysURL: keys, Encoding: "gzip"}})
	if rogueRes[0].OK || !strings.Contains(rogueRes[0].Reason, "unknown key") {
		t.Errorf("an answer signed by an unpublished key: %+v", rogueRes[0])
	}
}

func mustGenerate(t *testing.T) *httpsig.Key {
	t.Helper()
	k, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
