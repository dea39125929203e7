package httpsig

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"
)

// ContentDigest is the Content-Digest field value (RFC 9530) of body:
// `sha-256=:<base64>:`. It is the digest of the bytes sent, so a gzip
// variant has its own.
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	const prefix = "sha-256=:"
	b := make([]byte, 0, len(prefix)+base64.StdEncoding.EncodedLen(len(sum))+1)
	b = append(b, prefix...)
	b = base64.StdEncoding.AppendEncode(b, sum[:])
	b = append(b, ':')
	return string(b)
}

// CheckContentDigest checks body against a Content-Digest field value. It
// needs a sha-256 or sha-512 member and checks every one of the two that
// is present; other algorithms are ignored (RFC 9530 section 2).
func CheckContentDigest(field string, body []byte) error {
	if strings.TrimSpace(field) == "" {
		return fmt.Errorf("%w: no Content-Digest field", ErrDigestMismatch)
	}
	d, err := httpsfv.UnmarshalDictionary([]string{field})
	if err != nil {
		return fmt.Errorf("%w: Content-Digest is not a structured dictionary: %w", ErrMalformed, err)
	}
	checked := 0
	for _, alg := range []string{"sha-256", "sha-512"} {
		m, ok := d.Get(alg)
		if !ok {
			continue
		}
		it, ok := m.(httpsfv.Item)
		want, isBytes := it.Value.([]byte)
		if !ok || !isBytes {
			return fmt.Errorf("%w: Content-Digest %s is not a byte sequence", ErrMalformed, alg)
		}
		var got []byte
		if alg == "sha-256" {
			s := sha256.Sum256(body)
			got = s[:]
		} else {
			s := sha512.Sum512(body)
			got = s[:]
		}
		if subtle.ConstantTimeCompare(got, want) != 1 {
			return fmt.Errorf("%w: the %d bytes received hash to %s %s, the field says %s", ErrDigestMismatch,
				len(body), alg, base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(want))
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("%w: Content-Digest has neither sha-256 nor sha-512 (members: %s)", ErrDigestMismatch, strings.Join(d.Names(), ", "))
	}
	return nil
}
