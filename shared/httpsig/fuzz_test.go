package httpsig_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/httpsig"
)

// FuzzVerifyResponse feeds the verifier hostile Signature-Input,
// Signature and Content-Digest fields: it must never panic, and anything
// it accepts must be the one signature made by the trusted key.
func FuzzVerifyResponse(f *testing.F) {
	k := rfcKey(f)
	body := []byte("999999999.123456789")
	h := signed(f, newSigner(f, k), body)
	f.Add(h.Get("Signature-Input"), h.Get("Signature"), h.Get("Content-Digest"), body)
	f.Add(`tokendata=("@status");created=1;keyid="x"`, "tokendata=:AAAA:", "sha-256=:AAAA:", []byte{})
	f.Add(`tokendata=("@status" "@status");created=-1`, "tokendata=?1", "sha-256=", []byte("x"))
	v := &httpsig.Verifier{Keys: httpsig.NewKeySet(k.Public()), Now: func() time.Time { return t0 }}
	f.Fuzz(func(t *testing.T, input, sig, digest string, b []byte) {
		hh := h.Clone()
		hh.Set("Signature-Input", input)
		hh.Set("Signature", sig)
		hh.Set("Content-Digest", digest)
		got, err := v.VerifyResponse(http.StatusOK, hh, b)
		if err == nil && got.KeyID != k.ID() {
			t.Fatalf("accepted a signature by %q", got.KeyID)
		}
		for _, reason := range []error{httpsig.ErrNoSignature, httpsig.ErrMalformed, httpsig.ErrMissingComponent, httpsig.ErrUnknownKey,
			httpsig.ErrAlgorithm, httpsig.ErrCreated, httpsig.ErrExpired, httpsig.ErrBadSignature, httpsig.ErrDigestMismatch} {
			if errors.Is(err, reason) {
				return
			}
		}
		if err != nil {
			t.Fatalf("an error without a reason: %v", err)
		}
	})
}

// FuzzParseJWKS: any bytes give a key set or an error, never a panic,
// and every key in a set is under its own thumbprint.
func FuzzParseJWKS(f *testing.F) {
	body, err := httpsig.RenderJWKS(rfcKey(f).Public(), rfc8037Public(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body)
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":""}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := httpsig.ParseJWKS(b)
		if err != nil {
			return
		}
		for id, k := range set {
			if httpsig.Thumbprint(k) != id {
				t.Fatalf("key under %s has thumbprint %s", id, httpsig.Thumbprint(k))
			}
		}
	})
}
