package answer

import (
	"slices"
	"time"
)

// Signer signs one representation of a rendered answer: from its status,
// its header fields and the bytes sent, it makes the fields that carry
// the proof (Content-Digest, Signature-Input and Signature, RFC 9530 and
// RFC 9421), created at the given time. The edge gives one to the view
// when a signing key is configured; the view calls it when an answer is
// rendered, never per request.
type Signer interface {
	Sign(status int, hdr []Header, body []byte, created time.Time) ([]Header, error)
}

// signatureFields are the fields a Signer adds.
var signatureFields = []string{"Content-Digest", "Signature-Input", "Signature"}

// Sign adds s's fields to a and to each of its variants, each over the
// bytes of its own representation. An answer that is prev's again (the
// same status, ETag, Content-Type and X-Data-Updated-At: every covered
// component) keeps prev's signatures, so that an answer is signed once
// per change and every cache holds one signature for one body.
func (a *Answer) Sign(s Signer, prev *Answer, created time.Time) error {
	if prev != nil && prev.Status == a.Status && prev.ETag == a.ETag &&
		sameField(prev.Headers, a.Headers, "Content-Type") && sameField(prev.Headers, a.Headers, "X-Data-Updated-At") &&
		prev.signed() {
		a.Headers = withFields(a.Headers, prev.Headers)
		for c, v := range a.Variants {
			if v != nil && prev.Variants[c] != nil && prev.Variants[c].ETag == v.ETag {
				v.Headers = withFields(v.Headers, prev.Variants[c].Headers)
			} else if v != nil {
				if err := signVariant(s, a.Status, v, created); err != nil {
					return err
				}
			}
		}
		return nil
	}
	extra, err := s.Sign(a.Status, a.Headers, a.Body, created)
	if err != nil {
		return err
	}
	a.Headers = append(slices.Clip(a.Headers), extra...)
	for _, v := range a.Variants {
		if v != nil {
			if err := signVariant(s, a.Status, v, created); err != nil {
				return err
			}
		}
	}
	return nil
}

func signVariant(s Signer, status int, v *Variant, created time.Time) error {
	extra, err := s.Sign(status, v.Headers, v.Body, created)
	if err != nil {
		return err
	}
	v.Headers = append(slices.Clip(v.Headers), extra...)
	return nil
}

// signed reports whether a carries a signature.
func (a *Answer) signed() bool { return field(a.Headers, "Signature") != nil }

// withFields is hdr with the signature fields of from appended (a copy:
// hdr may be shared).
func withFields(hdr, from []Header) []Header {
	out := slices.Clip(hdr)
	for _, k := range signatureFields {
		if v := field(from, k); v != nil {
			out = append(out, Header{Key: k, Values: v})
		}
	}
	return out
}

func field(hdr []Header, key string) []string {
	for _, h := range hdr {
		if h.Key == key {
			return h.Values
		}
	}
	return nil
}

func sameField(a, b []Header, key string) bool {
	return slices.Equal(field(a, key), field(b, key))
}
