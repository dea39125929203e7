package edge

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/httpsig"
)

// Signing names the key that signs the answers. Its variables carry no
// EDGE_ prefix: they name the key of whichever binary serves the API, the
// edge or standalone.
type Signing struct {
	// KeyFile is the Ed25519 private key, PKCS#8 PEM (SIGNING_KEY_FILE);
	// empty: answers are not signed.
	KeyFile string `env:"SIGNING_KEY_FILE" doc:"Ed25519 private key (PKCS#8 PEM) that signs every answer of the API (RFC 9421, label tokendata); its RFC 7638 thumbprint is the key id, published in /api/keys. Empty: answers are not signed (standalone's demo mode signs with a key it generates)."`
	// PreviousKeyFile is the key being rotated out, a public key (PKIX
	// PEM) or its private key (SIGNING_PREVIOUS_KEY_FILE): published in
	// /api/keys after the current one, so that answers it signed still
	// verify while caches hold them.
	PreviousKeyFile string `env:"SIGNING_PREVIOUS_KEY_FILE" doc:"During a key rotation: the previous key (public key PEM, or its private key), published in /api/keys after the current one so that answers it signed, still in caches, verify. It signs nothing."`
}

// LoadSigning reads SIGNING_KEY_FILE and SIGNING_PREVIOUS_KEY_FILE.
func LoadSigning() (Signing, error) {
	var s Signing
	err := config.Load(&s, "")
	return s, err
}

// LoadKeys reads SIGNING_KEY_FILE and SIGNING_PREVIOUS_KEY_FILE and loads
// their keys. Without SIGNING_KEY_FILE the answers are not signed, unless
// generate is set (standalone's demo mode): then a key is made for this
// process, marked generated (/api/status says so).
func LoadKeys(generate bool) (*httpsig.Key, ed25519.PublicKey, error) {
	s, err := LoadSigning()
	if err != nil {
		return nil, nil, err
	}
	key, prev, err := s.Keys()
	if err != nil || key != nil || !generate {
		return key, prev, err
	}
	key, err = httpsig.GenerateKey()
	return key, nil, err
}

// Keys loads the configured keys: nil, nil without SIGNING_KEY_FILE.
func (s Signing) Keys() (*httpsig.Key, ed25519.PublicKey, error) {
	if s.KeyFile == "" {
		if s.PreviousKeyFile != "" {
			return nil, nil, errors.New("SIGNING_PREVIOUS_KEY_FILE is set without SIGNING_KEY_FILE: a rotation needs the new key")
		}
		return nil, nil, nil
	}
	key, err := httpsig.LoadKeyFile(s.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("SIGNING_KEY_FILE: %w", err)
	}
	if s.PreviousKeyFile == "" {
		return key, nil, nil
	}
	prev, err := httpsig.LoadPublicKeyFile(s.PreviousKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("SIGNING_PREVIOUS_KEY_FILE: %w", err)
	}
	if httpsig.Thumbprint(prev) == key.ID() {
		return nil, nil, errors.New("SIGNING_PREVIOUS_KEY_FILE is the same key as SIGNING_KEY_FILE")
	}
	return key, prev, nil
}

// signer signs the view's answers with one key: those that carry
// X-Data-Updated-At cover it with the default components; the answers
// made of the token file alone (max supply, exchanges, the OpenAPI
// document) have no data date, and their signature covers the other
// three.
type signer struct {
	data, static *httpsig.Signer
}

// staticComponents are the components of an answer without data.
var staticComponents = []string{"@status", "content-type", "content-digest"}

func newSigner(key *httpsig.Key) (*signer, error) {
	data, err := httpsig.NewSigner(key, httpsig.Label, httpsig.DefaultComponents)
	if err != nil {
		return nil, err
	}
	static, err := httpsig.NewSigner(key, httpsig.Label, staticComponents)
	if err != nil {
		return nil, err
	}
	return &signer{data: data, static: static}, nil
}

// Sign implements answer.Signer.
func (s *signer) Sign(status int, hdr []answer.Header, body []byte, created time.Time) ([]answer.Header, error) {
	h := make(http.Header, len(hdr)+1)
	for _, f := range hdr {
		h[f.Key] = f.Values
	}
	digest := answer.One(httpsig.ContentDigest(body))
	h["Content-Digest"] = digest
	by := s.data
	if _, ok := h["X-Data-Updated-At"]; !ok {
		by = s.static
	}
	sig, err := by.SignResponse(status, h, created)
	if err != nil {
		return nil, err
	}
	return []answer.Header{{Key: "Content-Digest", Values: digest},
		{Key: "Signature-Input", Values: answer.One(sig.Input)}, {Key: "Signature", Values: answer.One(sig.Value)}}, nil
}

// sign gives the view the signer and the JWKS of deps' keys.
func (s *Server) sign(token config.Token, deps Deps) error {
	if deps.SigningKey == nil {
		if deps.PreviousKey != nil {
			return errors.New("edge: a previous signing key without a current one")
		}
		s.signLog = []any{"signed", false, "why", "SIGNING_KEY_FILE is not set"}
		return nil
	}
	sg, err := newSigner(deps.SigningKey)
	if err != nil {
		return fmt.Errorf("edge: signing key: %w", err)
	}
	jwks, err := httpsig.RenderJWKS(deps.SigningKey.Public(), deps.PreviousKey)
	if err != nil {
		return fmt.Errorf("edge: signing keys: %w", err)
	}
	s.bodies.Signer, s.bodies.Keys = sg, jwks
	s.bodies.Signing = view.SigningInfo{KeyID: deps.SigningKey.ID(), Generated: deps.SigningKey.Generated()}
	if deps.PreviousKey != nil {
		s.bodies.Signing.PreviousKeyID = httpsig.Thumbprint(deps.PreviousKey)
	}
	if want := token.SigningKeyThumbprint; want != "" && want != deps.SigningKey.ID() {
		if !deps.SigningKey.Generated() {
			return fmt.Errorf("SIGNING_KEY_FILE: the key's thumbprint %s is not the token file's signing_key_thumbprint %s: the official identity vouches for another key", deps.SigningKey.ID(), want)
		}
		s.log.Warn("the generated demo signing key is not the token file's signing_key_thumbprint", "key_id", deps.SigningKey.ID(), "token_thumbprint", want)
	}
	s.signLog = []any{"signed", true, "key_id", deps.SigningKey.ID(), "generated", deps.SigningKey.Generated(),
		"previous_key_id", s.bodies.Signing.PreviousKeyID}
	return nil
}
