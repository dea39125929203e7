package httpsig_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/httpsig"
)

func TestKeysURLOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://data.example.org/api/total-supply":       "https://data.example.org/api/keys",
		"http://127.0.0.1:8080/api/price?x=1":             "http://127.0.0.1:8080/api/keys",
		"https://example.org/tokendata/api/market-data":   "https://example.org/tokendata/api/keys",
		"https://example.org/":                            "https://example.org/api/keys",
		"https://example.org/api/x/api/total-supply#frag": "https://example.org/api/x/api/keys",
	} {
		got, err := httpsig.KeysURLOf(in)
		if err != nil || got != want {
			t.Errorf("KeysURLOf(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://example.org/api/x", "example.org/api/x", "http:///api/x", "::"} {
		if _, err := httpsig.KeysURLOf(bad); err == nil {
			t.Errorf("KeysURLOf(%s) accepted", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	cur, prev, rogue := mustGenerate(t), rfcKey(t), mustGenerate(t)
	jwks, err := httpsig.RenderJWKS(cur.Public(), prev.Public())
	if err != nil {
		t.Fatal(err)
	}
	srv := newSignedServer(t, jwks)
	supply := []byte("999999999.123456789")
	text := "text/plain; charset=utf-8"
	srv.add(t, "/api/total-supply", text, supply, newSigner(t, cur))
	srv.add(t, "/old/api/total-supply", text, supply, newSigner(t, prev))
	srv.add(t, "/rogue/api/total-supply", text, supply, newSigner(t, rogue))
	srv.add(t, "/tampered/api/total-supply", text, supply, newSigner(t, cur))
	for _, v := range srv.answers["/tampered/api/total-supply"] {
		v.body[len(v.body)-1] ^= 1
	}
	all := []string{"identity", "gzip", "br"}
	now := func() time.Time { return t0.Add(time.Hour) }
	keys := srv.URL + "/api/keys"

	for _, tc := range []struct {
		name  string
		check httpsig.Check
		want  []string // lines of the report, in order
		err   error
	}{
		{"every encoding", httpsig.Check{URL: srv.URL + "/api/total-supply", Encodings: all},
			[]string{"trusting every published key", "identity  ok   status 200, 19 bytes (identity), signed by key " + cur.ID(),
				"gzip      ok", "(gzip)", "br        ok", "(br)", `covering "@status" "content-type" "content-digest" "x-data-updated-at"`, "VERIFIED"}, nil},
		{"pinned current key", httpsig.Check{URL: srv.URL + "/api/total-supply", Thumbprint: cur.ID()},
			[]string{"trusting only the pinned thumbprint " + cur.ID(), "identity  ok", "VERIFIED"}, nil},
		{"previous key, still published", httpsig.Check{URL: srv.URL + "/old/api/total-supply", KeysURL: keys, Encodings: all},
			[]string{"signed by key " + prev.ID(), "VERIFIED"}, nil},
		{"pinned, signed by the other published key", httpsig.Check{URL: srv.URL + "/old/api/total-supply", KeysURL: keys, Thumbprint: cur.ID()},
			[]string{"identity  FAIL unknown key: keyid \"" + prev.ID() + "\" is not among the trusted keys", "NOT VERIFIED: 1 of 1"}, errors.New("")},
		{"pinned thumbprint not published", httpsig.Check{URL: srv.URL + "/api/total-supply", Thumbprint: rogue.ID()},
			[]string{"keys      FAIL unknown key: no published key has the thumbprint"}, httpsig.ErrUnknownKey},
		{"unpublished key", httpsig.Check{URL: srv.URL + "/rogue/api/total-supply", KeysURL: keys, Encodings: all},
			[]string{"identity  FAIL unknown key", "gzip      FAIL unknown key", "br        FAIL unknown key", "NOT VERIFIED: 3 of 3"}, errors.New("")},
		{"a byte changed on the way", httpsig.Check{URL: srv.URL + "/tampered/api/total-supply", KeysURL: keys, Encodings: all},
			[]string{"identity  FAIL content digest mismatch: the 19 bytes received hash to sha-256 ", "gzip      FAIL content digest mismatch", "br        FAIL content digest mismatch"}, errors.New("")},
		{"not signed", httpsig.Check{URL: srv.URL + "/api/keys"},
			[]string{"identity  FAIL not signed: the response has no Signature-Input"}, errors.New("")},
		{"no keys there", httpsig.Check{URL: srv.URL + "/api/total-supply", KeysURL: srv.URL + "/nothing"},
			[]string{"keys      FAIL published keys: " + srv.URL + "/nothing answered 404"}, errors.New("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check.Now = now
			var out bytes.Buffer
			err := tc.check.Run(context.Background(), &out)
			if (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want one: %v\n%s", err, tc.err != nil, out.String())
			}
			if tc.err != nil && tc.err.Error() != "" && !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			rest := out.String()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("report lacks %q (in order):\n%s", w, out.String())
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
