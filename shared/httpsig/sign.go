package httpsig

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Label is the signature label of the service's answers.
const Label = "tokendata"

// DefaultComponents are the components every answer's signature covers:
// nothing that changes from one request to the next, so that an answer
// served by any cache still verifies.
var DefaultComponents = []string{"@status", "content-type", "content-digest", "x-data-updated-at"}

// Signer signs responses with one key, one label and one list of covered
// components. It is safe for concurrent use.
type Signer struct {
	key        *Key
	label      string
	components []string
	// head is `label=("c1" "c2" ...);created=`, tail `;keyid="…";alg="ed25519"`:
	// all of Signature-Input but the created time, serialized once.
	head, tail string
}

// NewSigner is a signer of responses covering components (in that order)
// under label, with the parameters created, keyid and alg="ed25519".
func NewSigner(key *Key, label string, components []string) (*Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("signer: no key")
	}
	if len(components) == 0 {
		return nil, fmt.Errorf("signer: no component to cover")
	}
	// A label is an RFC 8941 dictionary key; marshalling one proves it.
	d := httpsfv.NewDictionary()
	d.Add(label, httpsfv.NewItem(true))
	if _, err := httpsfv.Marshal(d); err != nil || label == "" {
		return nil, fmt.Errorf("signer: label %q is not a structured-field key (lower case letters, digits, _ - . *)", label)
	}
	const created = 1 // a placeholder, replaced at each signature
	sp, err := SignatureParams(components, Params{Created: created, KeyID: key.ID(), Alg: Alg})
	if err != nil {
		return nil, fmt.Errorf("signer: %w", err)
	}
	i := strings.Index(sp, ";created=1;")
	if i < 0 {
		return nil, fmt.Errorf("signer: unexpected signature parameters %s", sp)
	}
	return &Signer{
		key: key, label: label, components: append([]string(nil), components...),
		head: label + "=" + sp[:i+len(";created=")],
		tail: sp[i+len(";created=1"):],
	}, nil
}

// KeyID is the id of the signer's key.
func (s *Signer) KeyID() string { return s.key.ID() }

// Components are the covered components, in order.
func (s *Signer) Components() []string { return append([]string(nil), s.components...) }

// Signature holds the two field values that carry a signature.
type Signature struct {
	// Input is the Signature-Input field value, Value the Signature's.
	Input, Value string
}

// Set sets the Signature-Input and Signature fields of h.
func (g Signature) Set(h http.Header) {
	h["Signature-Input"] = []string{g.Input}
	h["Signature"] = []string{g.Value}
}

// SignResponse signs a response with the given status and header fields,
// created at the given time. Every covered field must be in h already,
// Content-Digest included (see ContentDigest).
func (s *Signer) SignResponse(status int, h http.Header, created time.Time) (Signature, error) {
	sec := created.Unix()
	if sec <= 0 {
		return Signature{}, fmt.Errorf("sign: created time %v is not after 1970", created)
	}
	input := s.head + strconv.FormatInt(sec, 10) + s.tail
	params := input[len(s.label)+1:]
	base, err := AppendBase(make([]byte, 0, 256), s.components, params, Response{Status: status, Header: h})
	if err != nil {
		return Signature{}, fmt.Errorf("sign: %w", err)
	}
	sig := s.key.Sign(base)
	v := make([]byte, 0, len(s.label)+3+base64.StdEncoding.EncodedLen(len(sig)))
	v = append(v, s.label...)
	v = append(v, "=:"...)
	v = base64.StdEncoding.AppendEncode(v, sig)
	v = append(v, ':')
	return Signature{Input: input, Value: string(v)}, nil
}
