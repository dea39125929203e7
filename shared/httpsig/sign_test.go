package httpsig_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/tokendata/tokendata/shared/httpsig"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// signed is a signed 200 text answer.
func signed(t testing.TB, s *httpsig.Signer, body []byte) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Data-Updated-At", "2025-06-01T11:59:30.000Z")
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("Content-Digest", httpsig.ContentDigest(body))
	sig, err := s.SignResponse(http.StatusOK, h, t0)
	if err != nil {
		t.Fatal(err)
	}
	sig.Set(h)
	return h
}

func newSigner(t testing.TB, k *httpsig.Key) *httpsig.Signer {
	t.Helper()
	s, err := httpsig.NewSigner(k, httpsig.Label, httpsig.DefaultComponents)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignResponseFields(t *testing.T) {
	k := rfcKey(t)
	h := signed(t, newSigner(t, k), []byte("999999999.123456789"))
	want := `tokendata=("@status" "content-type" "content-digest" "x-data-updated-at");created=1748779200;keyid="` + k.ID() + `";alg="ed25519"`
	if got := h.Get("Signature-Input"); got != want {
		t.Fatalf("Signature-Input\n got %s\nwant %s", got, want)
	}
	// The hand-joined field is what an RFC 8941 serializer writes.
	d, err := httpsfv.UnmarshalDictionary([]string{want})
	if err != nil {
		t.Fatal(err)
	}
	again, err := httpsfv.Marshal(d)
	if err != nil || again != want {
		t.Fatalf("re-serialized %s (%v)", again, err)
	}
	sig := h.Get("Signature")
	if !strings.HasPrefix(sig, "tokendata=:") || !strings.HasSuffix(sig, ":") || len(sig) != len("tokendata=::")+88 {
		t.Fatalf("Signature %s", sig)
	}
}

func TestNewSignerRefuses(t *testing.T) {
	k := rfcKey(t)
	for _, tc := range []struct {
		name       string
		label      string
		components []string
	}{
		{"upper-case label", "Tokendata", httpsig.DefaultComponents},
		{"empty label", "", httpsig.DefaultComponents},
		{"no component", "tokendata", nil},
		{"upper-case field", "tokendata", []string{"Content-Type"}},
		{"duplicate", "tokendata", []string{"@status", "@status"}},
		{"quote", "tokendata", []string{`a"b`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := httpsig.NewSigner(k, tc.label, tc.components); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := httpsig.NewSigner(nil, "tokendata", httpsig.DefaultComponents); err == nil {
		t.Fatal("a signer without key")
	}
	if _, err := newSigner(t, k).SignResponse(200, http.Header{}, t0); !errors.Is(err, httpsig.ErrMissingComponent) {
		t.Fatalf("signing without the covered fields: %v", err)
	}
}

func TestVerifyResponse(t *testing.T) {
	cur, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	prev := rfcKey(t)
	body := []byte(`{"price_usd":0.00000123}`)
	now := func() time.Time { return t0.Add(time.Hour) }
	trusted := httpsig.NewKeySet(cur.Public(), prev.Public())

	type mutation func(status *int, h http.Header, body *[]byte)
	for _, tc := range []struct {
		name    string
		key     *httpsig.Key
		keys    httpsig.KeySet
		mutate  mutation
		verify  func(v *httpsig.Verifier)
		wantErr error
		wantMsg string
	}{
		{name: "current key", key: cur},
		{name: "previous key during a rotation", key: prev},
		{name: "uncovered header changed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Set("Cache-Control", "no-store") }},
		{name: "added field", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Set("Age", "42") }},
		{name: "body byte changed", key: cur, mutate: func(_ *int, _ http.Header, b *[]byte) { (*b)[3] ^= 1 }, wantErr: httpsig.ErrDigestMismatch, wantMsg: "the 24 bytes received hash to sha-256 "},
		{name: "body truncated", key: cur, mutate: func(_ *int, _ http.Header, b *[]byte) { *b = (*b)[:10] }, wantErr: httpsig.ErrDigestMismatch},
		{name: "covered header changed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Set("X-Data-Updated-At", "2025-06-01T11:59:31.000Z") }, wantErr: httpsig.ErrBadSignature},
		{name: "content type changed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Set("Content-Type", "text/html") }, wantErr: httpsig.ErrBadSignature},
		{name: "digest and body replaced together", key: cur, mutate: func(_ *int, h http.Header, b *[]byte) {
			*b = []byte(`{"price_usd":1}`)
			h.Set("Content-Digest", httpsig.ContentDigest(*b))
		}, wantErr: httpsig.ErrBadSignature},
		{name: "status changed", key: cur, mutate: func(s *int, _ http.Header, _ *[]byte) { *s = 203 }, wantErr: httpsig.ErrBadSignature},
		{name: "covered header removed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Del("X-Data-Updated-At") }, wantErr: httpsig.ErrMissingComponent, wantMsg: "x-data-updated-at field is absent"},
		{name: "key not trusted", key: cur, keys: httpsig.NewKeySet(prev.Public()), wantErr: httpsig.ErrUnknownKey, wantMsg: cur.ID()},
		{name: "pinned thumbprint of the other key", key: prev, keys: httpsig.NewKeySet(cur.Public()), wantErr: httpsig.ErrUnknownKey},
		{name: "signature byte changed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(h.Get("Signature"), "tokendata=:"), ":"))
			if err != nil {
				panic(err)
			}
			raw[7] ^= 1
			v := "tokendata=:" + base64.StdEncoding.EncodeToString(raw) + ":"
			h.Set("Signature", v)
		}, wantErr: httpsig.ErrBadSignature},
		{name: "no signature", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Del("Signature"); h.Del("Signature-Input") }, wantErr: httpsig.ErrNoSignature},
		{name: "signature without input", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Del("Signature-Input") }, wantErr: httpsig.ErrMalformed},
		{name: "other label only", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) {
			h.Set("Signature-Input", strings.Replace(h.Get("Signature-Input"), "tokendata=", "cdn=", 1))
		}, wantErr: httpsig.ErrNoSignature, wantMsg: "labels: cdn"},
		{name: "input not a dictionary", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) { h.Set("Signature-Input", "tokendata=(((") }, wantErr: httpsig.ErrMalformed},
		{name: "fewer components covered", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) {
			h.Set("Signature-Input", strings.Replace(h.Get("Signature-Input"), ` "content-digest"`, "", 1))
		}, wantErr: httpsig.ErrMissingComponent, wantMsg: `does not cover "content-digest"`},
		{name: "alg changed", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) {
			h.Set("Signature-Input", strings.Replace(h.Get("Signature-Input"), `alg="ed25519"`, `alg="hmac-sha256"`, 1))
		}, wantErr: httpsig.ErrAlgorithm},
		{name: "created in the future", key: cur, verify: func(v *httpsig.Verifier) { v.Now = func() time.Time { return t0.Add(-2 * time.Minute) } }, wantErr: httpsig.ErrCreated},
		{name: "another signature beside ours", key: cur, mutate: func(_ *int, h http.Header, _ *[]byte) {
			h.Add("Signature-Input", `cdn=("@status");created=1;keyid="x"`)
			h.Add("Signature", `cdn=:AAAA:`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), body...)
			h := signed(t, newSigner(t, tc.key), b)
			status := http.StatusOK
			if tc.mutate != nil {
				tc.mutate(&status, h, &b)
			}
			keys := tc.keys
			if keys == nil {
				keys = trusted
			}
			v := &httpsig.Verifier{Keys: keys, Now: now}
			if tc.verify != nil {
				tc.verify(v)
			}
			got, err := v.VerifyResponse(status, h, b)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.KeyID != tc.key.ID() || !got.Created.Equal(t0) || got.Label != "tokendata" || got.Alg != "ed25519" || len(got.Components) != 4 {
					t.Fatalf("verified %+v", got)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

func TestCheckContentDigest(t *testing.T) {
	body := []byte(`{"hello": "world"}`)
	for _, tc := range []struct {
		name, field string
		want        error
	}{
		{"sha-256", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", nil},
		{"both, with an unknown", "md5=:AAAA:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:", nil},
		{"wrong sha-512 beside a right sha-256", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, sha-512=:AAAA:", httpsig.ErrDigestMismatch},
		{"only unknown", "md5=:AAAA:", httpsig.ErrDigestMismatch},
		{"empty", "", httpsig.ErrDigestMismatch},
		{"not bytes", `sha-256="abc"`, httpsig.ErrMalformed},
		{"not a dictionary", "sha-256=:", httpsig.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := httpsig.CheckContentDigest(tc.field, body)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// BenchmarkSignResponse is the cost of one signature: paid once per
// rendered answer and encoding, never per request.
func BenchmarkSignResponse(b *testing.B) {
	s := newSigner(b, rfcKey(b))
	body := []byte(`{"total_supply":999999999.123456789}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Data-Updated-At", "2025-06-01T11:59:30.000Z")
	b.ReportAllocs()
	for b.Loop() {
		h.Set("Content-Digest", httpsig.ContentDigest(body))
		if _, err := s.SignResponse(200, h, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyResponse(b *testing.B) {
	k := rfcKey(b)
	body := []byte(`{"total_supply":999999999.123456789}`)
	h := signed(b, newSigner(b, k), body)
	v := &httpsig.Verifier{Keys: httpsig.NewKeySet(k.Public()), Now: func() time.Time { return t0 }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyResponse(200, h, body); err != nil {
			b.Fatal(err)
		}
	}
}
