package httpsig

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
)

// JWK is one public key of a JWKS: an Octet Key Pair on Ed25519 (RFC
// 8037), its kid the key's thumbprint.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// JWKS is the body of a JSON Web Key Set (RFC 7517 section 5).
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK is the published form of an Ed25519 public key.
func PublicJWK(pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: b64url.EncodeToString(pub), Kid: Thumbprint(pub), Use: "sig", Alg: "EdDSA"}
}

// RenderJWKS is the JWKS body of the given public keys, in that order:
// the current key first, then the previous one during a rotation. A nil
// key is left out, so RenderJWKS(cur, nil) publishes the current key
// alone.
func RenderJWKS(keys ...ed25519.PublicKey) ([]byte, error) {
	set := JWKS{Keys: make([]JWK, 0, len(keys))}
	for _, k := range keys {
		if k == nil {
			continue
		}
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("public key of %d bytes, not Ed25519", len(k))
		}
		set.Keys = append(set.Keys, PublicJWK(k))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(set); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// KeySet holds trusted public keys by thumbprint.
type KeySet map[string]ed25519.PublicKey

// NewKeySet trusts the given keys.
func NewKeySet(keys ...ed25519.PublicKey) KeySet {
	s := make(KeySet, len(keys))
	for _, k := range keys {
		s[Thumbprint(k)] = k
	}
	return s
}

// maxJWKS bounds a JWKS body accepted by ParseJWKS.
const maxJWKS = 64 << 10

// ParseJWKS reads a JWKS body. Keys of another type (RSA, EC, X25519...)
// are skipped; an OKP Ed25519 key whose x is not 32 bytes, or whose kid
// is not its own thumbprint, makes the whole set an error, since either
// would be a broken or forged publication. A set without any Ed25519 key
// is an error too.
func ParseJWKS(body []byte) (KeySet, error) {
	if len(body) > maxJWKS {
		return nil, fmt.Errorf("JWKS: %d bytes, more than the %d accepted", len(body), maxJWKS)
	}
	var set struct {
		Keys []JWK `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("JWKS: not a JSON key set: %w", err)
	}
	out := make(KeySet, len(set.Keys))
	for i, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := b64url.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("JWKS: key %d: x is not a base64url Ed25519 public key of 32 bytes", i)
		}
		pub := ed25519.PublicKey(x)
		tp := Thumbprint(pub)
		if k.Kid != "" && k.Kid != tp {
			return nil, fmt.Errorf("JWKS: key %d: kid %q is not the key's thumbprint %q", i, k.Kid, tp)
		}
		out[tp] = pub
	}
	if len(out) == 0 {
		return nil, errors.New("JWKS: no Ed25519 key in the set")
	}
	return out, nil
}

// Only is the subset of s that holds the key with the given thumbprint,
// or an error when s does not hold it.
func (s KeySet) Only(thumbprint string) (KeySet, error) {
	k, ok := s[thumbprint]
	if !ok {
		return nil, fmt.Errorf("%w: no published key has the thumbprint %q", ErrUnknownKey, thumbprint)
	}
	return KeySet{thumbprint: k}, nil
}
