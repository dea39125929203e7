package httpsig

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// The reasons a verification fails. Every error of VerifyResponse wraps
// exactly one of them, with the details in its text.
var (
	ErrNoSignature      = errors.New("not signed")
	ErrMalformed        = errors.New("malformed signature fields")
	ErrMissingComponent = errors.New("missing component")
	ErrUnknownKey       = errors.New("unknown key")
	ErrAlgorithm        = errors.New("unsupported algorithm")
	ErrCreated          = errors.New("bad creation time")
	ErrExpired          = errors.New("signature expired")
	ErrBadSignature     = errors.New("bad signature")
	ErrDigestMismatch   = errors.New("content digest mismatch")
)

// Verifier checks signed responses against trusted keys.
type Verifier struct {
	// Keys are the trusted public keys, by thumbprint.
	Keys KeySet
	// Label is the signature to check; Label ("tokendata") when empty.
	Label string
	// Required are the components the signature must cover; when nil,
	// RequiredOf the response's fields. Content-Digest is checked against the
	// body whenever the field is covered.
	Required []string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Skew is how far in the future a created time may be (the signer's
	// clock ahead of ours); one minute when zero.
	Skew time.Duration
}

// Verified describes a signature that verified.
type Verified struct {
	Label      string
	KeyID      string
	Alg        string
	Created    time.Time
	Components []string
	// Digest is the Content-Digest that was checked against the body.
	Digest string
}

// VerifyResponse checks the signature of a response whose status, header
// fields and body bytes (as received, before any decoding) are given,
// then its Content-Digest against body.
func (v *Verifier) VerifyResponse(status int, h http.Header, body []byte) (Verified, error) {
	label := v.Label
	if label == "" {
		label = Label
	}
	sig, err := v.parse(label, h)
	if err != nil {
		return Verified{}, err
	}
	required := v.Required
	if required == nil {
		required = RequiredOf(h)
	}
	for _, c := range required {
		if !slices.Contains(sig.Components, c) {
			return Verified{}, fmt.Errorf("%w: the signature does not cover %q (it covers %s)", ErrMissingComponent, c, strings.Join(sig.Components, " "))
		}
	}
	pub, ok := v.Keys[sig.KeyID]
	if !ok {
		return Verified{}, fmt.Errorf("%w: keyid %q is not among the trusted keys (%s)", ErrUnknownKey, sig.KeyID, strings.Join(v.keyIDs(), ", "))
	}
	if sig.Alg != "" && sig.Alg != Alg {
		return Verified{}, fmt.Errorf("%w: alg %q, expected %q", ErrAlgorithm, sig.Alg, Alg)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	skew := v.Skew
	if skew == 0 {
		skew = time.Minute
	}
	t := now()
	if sig.Created.After(t.Add(skew)) {
		return Verified{}, fmt.Errorf("%w: created %s is in the future (now %s)", ErrCreated, sig.Created.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
	}
	if !sig.expires.IsZero() && t.After(sig.expires) {
		return Verified{}, fmt.Errorf("%w: at %s", ErrExpired, sig.expires.UTC().Format(time.RFC3339))
	}
	base, err := AppendBase(make([]byte, 0, 256), sig.Components, sig.params, Response{Status: status, Header: h})
	if err != nil {
		return Verified{}, err
	}
	if !ed25519.Verify(pub, base, sig.value) {
		return Verified{}, fmt.Errorf("%w: the signature does not match the covered components %s under key %s (a covered field or the status was changed, or another key signed)",
			ErrBadSignature, strings.Join(sig.Components, " "), sig.KeyID)
	}
	res := Verified{Label: label, KeyID: sig.KeyID, Alg: sig.Alg, Created: sig.Created, Components: sig.Components}
	if slices.Contains(sig.Components, "content-digest") {
		res.Digest = strings.Join(h.Values("Content-Digest"), ", ")
		if err := CheckContentDigest(res.Digest, body); err != nil {
			return Verified{}, err
		}
	}
	return res, nil
}

func (v *Verifier) keyIDs() []string {
	ids := make([]string, 0, len(v.Keys))
	for id := range v.Keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return []string{"none"}
	}
	return ids
}

// parsed is one labelled signature read from Signature-Input and Signature.
type parsed struct {
	Verified
	expires time.Time
	// params is the canonical serialization of the inner list, the
	// "@signature-params" value.
	params string
	value  []byte
}

func (v *Verifier) parse(label string, h http.Header) (parsed, error) {
	inputs, sigs := h.Values("Signature-Input"), h.Values("Signature")
	if len(inputs) == 0 && len(sigs) == 0 {
		return parsed{}, fmt.Errorf("%w: the response has no Signature-Input and no Signature field", ErrNoSignature)
	}
	if len(inputs) == 0 || len(sigs) == 0 {
		return parsed{}, fmt.Errorf("%w: Signature-Input and Signature must come together", ErrMalformed)
	}
	in, err := httpsfv.UnmarshalDictionary(inputs)
	if err != nil {
		return parsed{}, fmt.Errorf("%w: Signature-Input: %w", ErrMalformed, err)
	}
	sd, err := httpsfv.UnmarshalDictionary(sigs)
	if err != nil {
		return parsed{}, fmt.Errorf("%w: Signature: %w", ErrMalformed, err)
	}
	m, ok := in.Get(label)
	if !ok {
		return parsed{}, fmt.Errorf("%w: no signature labelled %q (labels: %s)", ErrNoSignature, label, strings.Join(in.Names(), ", "))
	}
	il, ok := m.(httpsfv.InnerList)
	if !ok {
		return parsed{}, fmt.Errorf("%w: Signature-Input %s is not an inner list", ErrMalformed, label)
	}
	var p parsed
	p.Label = label
	for _, it := range il.Items {
		name, ok := it.Value.(string)
		if !ok {
			return parsed{}, fmt.Errorf("%w: Signature-Input %s: a component is not a string", ErrMalformed, label)
		}
		if len(it.Params.Names()) > 0 {
			return parsed{}, fmt.Errorf("%w: component %q has parameters (%s), which this verifier does not support", ErrMalformed, name, strings.Join(it.Params.Names(), ", "))
		}
		if slices.Contains(p.Components, name) {
			return parsed{}, fmt.Errorf("%w: component %q is covered twice", ErrMalformed, name)
		}
		p.Components = append(p.Components, name)
	}
	created, ok := il.Params.Get("created")
	sec, isInt := created.(int64)
	if !ok || !isInt {
		return parsed{}, fmt.Errorf("%w: Signature-Input %s has no integer created parameter", ErrMalformed, label)
	}
	p.Created = time.Unix(sec, 0)
	if e, ok := il.Params.Get("expires"); ok {
		es, isInt := e.(int64)
		if !isInt {
			return parsed{}, fmt.Errorf("%w: expires is not an integer", ErrMalformed)
		}
		p.expires = time.Unix(es, 0)
	}
	kid, _ := il.Params.Get("keyid")
	if p.KeyID, ok = kid.(string); !ok || p.KeyID == "" {
		return parsed{}, fmt.Errorf("%w: Signature-Input %s has no keyid parameter", ErrMalformed, label)
	}
	if a, ok := il.Params.Get("alg"); ok {
		if p.Alg, ok = a.(string); !ok {
			return parsed{}, fmt.Errorf("%w: alg is not a string", ErrMalformed)
		}
	}
	if p.params, err = httpsfv.Marshal(httpsfv.List{il}); err != nil {
		return parsed{}, fmt.Errorf("%w: Signature-Input %s: %w", ErrMalformed, label, err)
	}
	sm, ok := sd.Get(label)
	if !ok {
		return parsed{}, fmt.Errorf("%w: Signature-Input has %q but Signature does not", ErrMalformed, label)
	}
	item, ok := sm.(httpsfv.Item)
	if !ok {
		return parsed{}, fmt.Errorf("%w: Signature %s is not a byte sequence", ErrMalformed, label)
	}
	if p.value, ok = item.Value.([]byte); !ok || len(p.value) != ed25519.SignatureSize {
		return parsed{}, fmt.Errorf("%w: Signature %s is not a byte sequence of %d bytes", ErrMalformed, label, ed25519.SignatureSize)
	}
	return p, nil
}

// RequiredOf is what the signature of a response with header fields h
// must cover: "@status", "content-type" and "content-digest", and
// "x-data-updated-at" whenever the response carries that field. Only
// the answers made of the service's configuration alone (the maximum
// supply, the exchanges, the OpenAPI document) have no data date; a
// proxy that removed the field from a data answer would break its
// signature, which covers it.
func RequiredOf(h http.Header) []string {
	if _, ok := h["X-Data-Updated-At"]; ok {
		return DefaultComponents
	}
	return DefaultComponents[:3]
}
