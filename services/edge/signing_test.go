package edge

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/httpsig"
)

// withKey signs the harness's answers with key.
func withKey(key *httpsig.Key) harnessOpt {
	return func(_ *config.Common, _ *Config, d *Deps) { d.SigningKey = key }
}

// signedPaths are the paths whose 200 answers are signed: every rendered
// path of the API but /api/keys, a history among them.
var signedPaths = []string{
	view.PathTotalSupply, view.PathCirculatingSupply, view.PathMaxSupply, view.PathSupply, view.PathCoinGeckoSupply,
	view.PathPrice, view.PathHolders, view.PathTokenMetadata, view.PathExchanges, view.PathMarket, view.PathMarketData,
	view.PathMarketPairs, view.PathOpenAPI, view.HistoryPath("supply", contract.Window24h),
}

// keysOf is the key set the edge publishes at /api/keys.
func keysOf(t *testing.T, h *harness) httpsig.KeySet {
	t.Helper()
	rec := h.do(http.MethodGet, view.PathKeys)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("/api/keys: %d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	set, err := httpsig.ParseJWKS(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("/api/keys: %v: %s", err, rec.Body)
	}
	return set
}

// TestSignedAnswersVerify: with a signing key, every answer of every data
// path, in identity, gzip and br, GET and HEAD, carries a Content-Digest
// of the bytes sent and a tokendata signature that verifies against the
// published keys; a changed byte of the body or of a covered field, or a
// key that is not published, fails.
func TestSignedAnswersVerify(t *testing.T) {
	key, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil, withKey(key))
	h.writeAll()
	h.refresh()
	keys := keysOf(t, h)
	if _, ok := keys[key.ID()]; !ok || len(keys) != 1 {
		t.Fatalf("/api/keys publishes %v, want the key %s alone", keys, key.ID())
	}
	v := &httpsig.Verifier{Keys: keys, Now: h.clock.Now}
	codings := map[string]int{}
	for _, p := range signedPaths {
		for _, enc := range []string{"", "gzip", "br"} {
			rec := h.do(http.MethodGet, p, "Accept-Encoding", enc)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", p, enc, rec.Code, rec.Body)
			}
			got, err := v.VerifyResponse(rec.Code, rec.Header(), rec.Body.Bytes())
			if err != nil {
				t.Errorf("%s (%s): %v", p, enc, err)
				continue
			}
			codings[rec.Header().Get("Content-Encoding")]++
			if got.KeyID != key.ID() || got.Alg != httpsig.Alg || !got.Created.Equal(t0.Truncate(time.Second)) {
				t.Errorf("%s (%s): verified %+v", p, enc, got)
			}
			if rec.Header().Get("X-Data-Updated-At") != "" && !strings.Contains(rec.Header().Get("Signature-Input"), `"x-data-updated-at"`) {
				t.Errorf("%s (%s): a data answer whose signature leaves its data date out: %s", p, enc, rec.Header().Get("Signature-Input"))
			}
			head := h.do(http.MethodHead, p, "Accept-Encoding", enc)
			for _, f := range []string{"Content-Digest", "Signature-Input", "Signature"} {
				if head.Header().Get(f) != rec.Header().Get(f) {
					t.Errorf("%s (%s): HEAD's %s %q differs from GET's %q", p, enc, f, head.Header().Get(f), rec.Header().Get(f))
				}
			}
			// what a proxy or a cache could change
			body := bytes.Clone(rec.Body.Bytes())
			body[len(body)/2] ^= 1
			if _, err := v.VerifyResponse(rec.Code, rec.Header(), body); !errors.Is(err, httpsig.ErrDigestMismatch) {
				t.Errorf("%s (%s): a changed body byte: %v", p, enc, err)
			}
			hdr := rec.Header().Clone()
			hdr.Set("Content-Type", "text/html")
			if _, err := v.VerifyResponse(rec.Code, hdr, rec.Body.Bytes()); !errors.Is(err, httpsig.ErrBadSignature) {
				t.Errorf("%s (%s): a changed Content-Type: %v", p, enc, err)
			}
		}
	}
	if codings["gzip"] == 0 || codings["br"] == 0 || codings[""] == 0 {
		t.Errorf("representations verified: %v; want identity, gzip and br among them", codings)
	}
	other, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	stranger := &httpsig.Verifier{Keys: httpsig.NewKeySet(other.Public()), Now: h.clock.Now}
	rec := h.do(http.MethodGet, view.PathTotalSupply)
	if _, err := stranger.VerifyResponse(rec.Code, rec.Header(), rec.Body.Bytes()); !errors.Is(err, httpsig.ErrUnknownKey) {
		t.Errorf("a key that is not published: %v", err)
	}
	// 304: the signature of the representation the client holds
	etag := rec.Header().Get("Etag")
	if nm := h.do(http.MethodGet, view.PathTotalSupply, "If-None-Match", etag); nm.Code != http.StatusNotModified ||
		nm.Header().Get("Signature") != rec.Header().Get("Signature") {
		t.Errorf("304: %d, signature %q, want %q", nm.Code, nm.Header().Get("Signature"), rec.Header().Get("Signature"))
	}
}

// TestSignedOncePerChange: a render of the same body keeps its signature
// (every cache holds one signature for one body); a new document is
// signed anew, and both verify.
func TestSignedOncePerChange(t *testing.T) {
	key, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil, withKey(key))
	h.writeAll()
	h.refresh()
	v := &httpsig.Verifier{Keys: keysOf(t, h), Now: h.clock.Now}
	first := h.do(http.MethodGet, view.PathTotalSupply)
	h.clock.Add(5 * time.Second)
	h.srv.rerender()
	if again := h.do(http.MethodGet, view.PathTotalSupply); again.Header().Get("Signature") != first.Header().Get("Signature") {
		t.Errorf("the same body signed again: %q, then %q", first.Header().Get("Signature"), again.Header().Get("Signature"))
	}
	sp := edgetest.Supply()
	sp.TotalRaw, sp.CirculatingRaw = "999999998123456", "999999998123456"
	h.write(contract.DomainSupply, sp, 0)
	h.refresh()
	burnt := h.do(http.MethodGet, view.PathTotalSupply)
	if burnt.Body.String() != "999999998.123456" || burnt.Header().Get("Signature") == first.Header().Get("Signature") {
		t.Fatalf("after a burn: %s signed %q (before: %q)", burnt.Body, burnt.Header().Get("Signature"), first.Header().Get("Signature"))
	}
	if _, err := v.VerifyResponse(burnt.Code, burnt.Header(), burnt.Body.Bytes()); err != nil {
		t.Errorf("the new figure: %v", err)
	}
}

// TestUnsignedWithoutKey: without a key nothing is signed and /api/keys
// publishes no key.
func TestUnsignedWithoutKey(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	if rec := h.do(http.MethodGet, view.PathKeys); rec.Code != http.StatusOK || rec.Body.String() != `{"keys":[]}` {
		t.Errorf("/api/keys without a key: %d %s", rec.Code, rec.Body)
	}
	for _, p := range signedPaths {
		rec := h.do(http.MethodGet, p)
		for _, f := range []string{"Content-Digest", "Signature-Input", "Signature"} {
			if rec.Header().Get(f) != "" {
				t.Errorf("%s: %s without a key", p, f)
			}
		}
	}
}

// TestTokenVouchesForTheKey: a token file that states the signing key's
// thumbprint shows it in /api/token-metadata; an edge started with
// another key refuses to start, naming both (a generated demo key only
// warns); /api/status says which key signs.
func TestTokenVouchesForTheKey(t *testing.T) {
	key, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	configured, err := httpsig.ParseKey(mustPKCS8(t, key))
	if err != nil {
		t.Fatal(err)
	}
	other, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	token := edgetest.Token()
	token.SigningKeyThumbprint = configured.ID()

	h := newHarnessOf(t, token, nil, withKey(configured))
	h.writeAll()
	h.refresh()
	if rec := h.do(http.MethodGet, view.PathTokenMetadata); !strings.Contains(rec.Body.String(), `"signing_key_thumbprint":"`+configured.ID()+`"`) {
		t.Errorf("/api/token-metadata: %s", rec.Body)
	}
	st := h.srv.statusReportNow()
	if sg := st.Checks.Signing; sg.Status != "on" || sg.KeyID == nil || *sg.KeyID != configured.ID() || sg.Generated {
		t.Errorf("status signing: %+v", sg)
	}

	otherConfigured, err := httpsig.ParseKey(mustPKCS8(t, other))
	if err != nil {
		t.Fatal(err)
	}
	common, cfg := config.Common{}, DefaultConfig()
	_, err = New(common, token, cfg, Deps{Store: h.store, SigningKey: otherConfigured})
	if err == nil || !strings.Contains(err.Error(), otherConfigured.ID()) || !strings.Contains(err.Error(), configured.ID()) {
		t.Errorf("another key than the token file's: %v", err)
	}
	if _, err := New(common, token, cfg, Deps{Store: h.store, SigningKey: other}); err != nil {
		t.Errorf("a generated demo key: %v", err)
	}
	if st := newHarness(t, nil).srv.statusReportNow(); st.Checks.Signing.Status != "off" || st.Checks.Signing.KeyID != nil {
		t.Errorf("without a key: %+v", st.Checks.Signing)
	}
}

func mustPKCS8(t *testing.T, k *httpsig.Key) []byte {
	t.Helper()
	b, err := k.MarshalPKCS8()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
