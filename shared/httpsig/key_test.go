package httpsig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/httpsig"
)

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))

	ok := write("ok.pem", rfcPrivatePEM)
	k, err := httpsig.LoadKeyFile(ok)
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != httpsig.Thumbprint(k.Public()) || k.Generated() {
		t.Fatalf("loaded key: id %s generated %v", k.ID(), k.Generated())
	}

	for _, tc := range []struct{ name, path, want string }{
		{"missing file", filepath.Join(dir, "absent.pem"), "no such file"},
		{"not PEM", write("text", "hello"), "no PEM block"},
		{"public key", write("pub.pem", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=\n-----END PUBLIC KEY-----\n"), "PUBLIC KEY"},
		{"encrypted", write("enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), "encrypted"},
		{"other type", write("rsa.pem", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), `"RSA PRIVATE KEY"`},
		{"bad DER", write("der.pem", "-----BEGIN PRIVATE KEY-----\naW52YWxpZA==\n-----END PRIVATE KEY-----\n"), "not a PKCS#8"},
		{"ECDSA", write("ec.pem", ecPEM), "ECDSA, expected Ed25519"},
		{"two keys", write("two.pem", rfcPrivatePEM+rfcPrivatePEM), "more than one PEM block"},
		{"too large", write("big.pem", strings.Repeat("x", 70<<10)), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpsig.LoadKeyFile(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "signing key") {
				t.Fatalf("error %v does not say it is about the signing key", err)
			}
		})
	}
}

func TestGenerateKeyRoundTrip(t *testing.T) {
	k, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if !k.Generated() {
		t.Fatal("a generated key is not marked as such")
	}
	p, err := k.MarshalPKCS8()
	if err != nil {
		t.Fatal(err)
	}
	back, err := httpsig.ParseKey(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != k.ID() || back.Generated() {
		t.Fatalf("round trip: id %s (want %s), generated %v", back.ID(), k.ID(), back.Generated())
	}
}

// TestParsePublicKey: the key being rotated out is read from its public
// key (PKIX) or its private key, and anything else is refused by name.
func TestParsePublicKey(t *testing.T) {
	k, err := httpsig.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := k.MarshalPKCS8()
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"public":  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		"private": pkcs8,
	} {
		pub, err := httpsig.ParsePublicKey(in)
		if err != nil || httpsig.Thumbprint(pub) != k.ID() {
			t.Errorf("%s: %v, thumbprint %q, want %q", name, err, httpsig.Thumbprint(pub), k.ID())
		}
	}
	for name, in := range map[string][]byte{
		"not PEM":     []byte("hello"),
		"certificate": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"garbage":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
	} {
		if _, err := httpsig.ParsePublicKey(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
