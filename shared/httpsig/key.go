// Package httpsig signs and verifies the service's answers with HTTP
// Message Signatures (RFC 9421) over an Ed25519 key, with the body bound
// by a Content-Digest field (RFC 9530).
//
// The signer is the service's: one Ed25519 key, its key id the RFC 7638
// JWK thumbprint of its public key, published as a JWKS (RFC 7517, OKP
// keys per RFC 8037). The verifier is a client's: it checks the digest
// of the bytes received and the signature against a set of trusted keys,
// and says which check failed.
//
// Signing is meant to happen once per rendered answer, not per request:
// nothing covered changes from one request to the next, so a signed
// answer still verifies when a cache serves it.
package httpsig

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
)

// Alg is the RFC 9421 algorithm name of every signature made here.
const Alg = "ed25519"

// maxKeyFile bounds the bytes read from a key file: a PKCS#8 Ed25519 key
// in PEM is about 120 bytes.
const maxKeyFile = 64 << 10

// Key is a private signing key with its key id.
type Key struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
	// generated is true for a key made by GenerateKey (demo mode): it
	// proves nothing about who served an answer.
	generated bool
}

// ID is the key id: the RFC 7638 thumbprint of the public key.
func (k *Key) ID() string { return k.id }

// Public is the public half of the key.
func (k *Key) Public() ed25519.PublicKey { return k.pub }

// Generated says whether the key was generated at start (demo mode)
// rather than loaded.
func (k *Key) Generated() bool { return k.generated }

// Sign signs msg (a signature base) with the key.
func (k *Key) Sign(msg []byte) []byte { return ed25519.Sign(k.priv, msg) }

// LoadKeyFile reads an Ed25519 private key in PKCS#8 PEM from path.
func LoadKeyFile(path string) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	defer func() { _ = f.Close() }()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	if len(buf) > maxKeyFile {
		return nil, fmt.Errorf("signing key %s: larger than %d bytes, not a PEM key", path, maxKeyFile)
	}
	k, err := ParseKey(buf)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

// ParseKey decodes an Ed25519 private key in PKCS#8 PEM ("PRIVATE KEY",
// as `openssl genpkey -algorithm ed25519` writes it).
func ParseKey(pemBytes []byte) (*Key, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block found: expected -----BEGIN PRIVATE KEY----- (PKCS#8; make one with `openssl genpkey -algorithm ed25519`)")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		if next, _ := pem.Decode(rest); next != nil {
			return nil, errors.New("more than one PEM block: the file must hold the signing key alone")
		}
	}
	switch block.Type {
	case "PRIVATE KEY":
	case "ENCRYPTED PRIVATE KEY":
		return nil, errors.New("the PEM key is encrypted: store it unencrypted in a Secret or a file readable only by the service")
	case "PUBLIC KEY":
		return nil, errors.New("PEM block is a PUBLIC KEY: the signing key is the private key (PRIVATE KEY)")
	default:
		return nil, fmt.Errorf("PEM block is %q, expected PRIVATE KEY (PKCS#8 Ed25519)", block.Type)
	}
	if len(block.Headers) > 0 {
		return nil, errors.New("the PEM block has headers: an encrypted legacy key? expected plain PKCS#8")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS#8 private key: %w", err)
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the key is %s, expected Ed25519", keyKind(parsed))
	}
	return newKey(priv, false), nil
}

// GenerateKey makes a fresh Ed25519 key, marked as generated.
func GenerateKey() (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return newKey(priv, true), nil
}

// MarshalPKCS8 is the key in PKCS#8 PEM, the form ParseKey reads.
func (k *Key) MarshalPKCS8() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newKey(priv ed25519.PrivateKey, generated bool) *Key {
	pub, _ := priv.Public().(ed25519.PublicKey)
	return &Key{priv: priv, pub: pub, id: Thumbprint(pub), generated: generated}
}

// Thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url without
// padding) of an Ed25519 public key: the hash of its required members in
// lexicographic order, {"crv":"Ed25519","kty":"OKP","x":"…"} (RFC 8037).
func Thumbprint(pub ed25519.PublicKey) string {
	x := b64url.EncodeToString(pub)
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return b64url.EncodeToString(sum[:])
}

var b64url = base64.RawURLEncoding

func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PrivateKey:
		return "RSA"
	case *ecdsa.PrivateKey:
		return "ECDSA"
	case *ecdh.PrivateKey:
		return "X25519 or ECDH"
	default:
		return fmt.Sprintf("%T", k)
	}
}

// LoadPublicKeyFile reads an Ed25519 public key from a PEM file: a PUBLIC
// KEY (PKIX, as `openssl pkey -pubout` writes it) or a PRIVATE KEY
// (PKCS#8), whose public half is taken. It is how the key being rotated
// out is published beside the new one.
func LoadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	defer func() { _ = f.Close() }()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	if len(buf) > maxKeyFile {
		return nil, fmt.Errorf("public key %s: larger than %d bytes, not a PEM key", path, maxKeyFile)
	}
	pub, err := ParsePublicKey(buf)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	return pub, nil
}

// ParsePublicKey decodes an Ed25519 public key from PEM: PUBLIC KEY
// (PKIX), or PRIVATE KEY (PKCS#8, its public half).
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block found: expected -----BEGIN PUBLIC KEY----- or -----BEGIN PRIVATE KEY-----")
	}
	if block.Type == "PRIVATE KEY" {
		k, err := ParseKey(pemBytes)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM block is %q, expected PUBLIC KEY (PKIX Ed25519) or PRIVATE KEY", block.Type)
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKIX public key: %w", err)
	}
	pub, ok := parsed.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the key is %s, expected Ed25519", keyKind(parsed))
	}
	return pub, nil
}
