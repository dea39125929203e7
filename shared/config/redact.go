package config

import (
	"encoding/hex"
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// Mask replaces every secret fragment that Redact finds.
const Mask = "[redacted]"

// MinSecretLen is the shortest fragment Redact masks on its own: a query
// value such as "1" or "true" would otherwise blank ordinary words. A
// whole secret shorter than this is not masked either (no real key or
// URL is that short).
const MinSecretLen = 6

// Redactor removes secret values from text. It is built once from the
// configured secrets; a nil *Redactor removes nothing.
//
// From each secret it derives the fragments an error message may quote:
//   - the whole value;
//   - for a URL with a host: the user info, the password, the raw query,
//     every query parameter value, and the user name, every label of the
//     host and every path segment that look like a token: 16 characters
//     or more, or MinSecretLen or more with at least one digit (so
//     "/v2/<key>", "/<key>/", "https://<key>@host" and "<key>.rpc.example"
//     are masked, "/v2", "/solana-mainnet", the user "default" and the
//     host "mainnet.helius-rpc.com" are not: an error names the host);
//
// each as written in the URL, decoded, query-escaped, path-escaped and as
// a hex dump. Matching ignores ASCII case, so %2f and %2F, or a hex dump
// in upper case, are found too. Fragments shorter than MinSecretLen are
// dropped. Every stretch of text covered by one or more fragments becomes
// one Mask.
type Redactor struct {
	frags []string // ASCII-lowercased, distinct, longest first
}

// NewRedactor returns the redactor of secrets (empty ones are skipped).
func NewRedactor(secrets ...Secret) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		for _, f := range fragments(s.Reveal()) {
			for _, form := range encodings(f) {
				if len(form) < MinSecretLen {
					continue
				}
				form = lowerASCII(form)
				if !seen[form] {
					seen[form] = true
					r.frags = append(r.frags, form)
				}
			}
		}
	}
	slices.SortFunc(r.frags, func(a, b string) int { return len(b) - len(a) })
	return r
}

// Redact returns msg with every occurrence of a secret fragment replaced
// by Mask.
func (r *Redactor) Redact(msg string) string {
	if r == nil || len(r.frags) == 0 || len(msg) < MinSecretLen {
		return msg
	}
	low := lowerASCII(msg)
	var spans [][2]int
	for _, f := range r.frags {
		for i := 0; i+len(f) <= len(low); {
			j := strings.Index(low[i:], f)
			if j < 0 {
				break
			}
			spans = append(spans, [2]int{i + j, i + j + len(f)})
			i += j + 1
		}
	}
	if len(spans) == 0 {
		return msg
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	b.Grow(len(msg))
	at := 0
	for k := 0; k < len(spans); {
		start, end := spans[k][0], spans[k][1]
		// Overlapping or touching matches become one mask, so that no
		// piece of a secret is left between two of them.
		for k++; k < len(spans) && spans[k][0] <= end; k++ {
			end = max(end, spans[k][1])
		}
		b.WriteString(msg[at:start])
		b.WriteString(Mask)
		at = end
	}
	b.WriteString(msg[at:])
	return b.String()
}

// Redact removes every fragment of secrets from msg (see Redactor). Use
// it on any text that may quote a URL or a key before it is stored,
// logged or served; build a Redactor once where it is used often.
func Redact(msg string, secrets ...Secret) string {
	return NewRedactor(secrets...).Redact(msg)
}

// SecretsOf returns the non-empty Secret fields of v, a struct or a
// pointer to one, nested structs included: every secret a configuration
// holds, present and future.
func SecretsOf(v any) []Secret {
	var out []Secret
	var walk func(rv reflect.Value)
	walk = func(rv reflect.Value) {
		for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
			if rv.IsNil() {
				return
			}
			rv = rv.Elem()
		}
		if rv.Type() == reflect.TypeFor[Secret]() {
			if s := Secret(rv.String()); s != "" {
				out = append(out, s)
			}
			return
		}
		if rv.Kind() != reflect.Struct {
			return
		}
		for i := range rv.NumField() {
			if rv.Type().Field(i).IsExported() {
				walk(rv.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}

// fragments are the secret parts of one secret value, decoded where the
// URL encodes them.
func fragments(v string) []string {
	if v == "" {
		return nil
	}
	out := []string{v}
	if strings.Contains(v, ",") { // a list of URLs (SOLANA_RPC_URLS): each one's too
		for part := range strings.SplitSeq(v, ",") {
			out = append(out, fragments(strings.TrimSpace(part))...)
		}
		return out
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return out
	}
	out = append(out, u.RawQuery)
	// The host names the provider ("mainnet.helius-rpc.com"), which an
	// operator must read to fix a connection failure; only its labels
	// that look like a key ("k3y0f1234.rpc.example") are secret.
	for label := range strings.FieldsFuncSeq(u.Host, func(r rune) bool { return r == '.' || r == ':' }) {
		if tokenLike(label) && !allDigits(label) {
			out = append(out, label)
		}
	}
	if u.User != nil {
		out = append(out, u.User.String())
		if tokenLike(u.User.Username()) { // a key, not "default" or "admin"
			out = append(out, u.User.Username())
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		_, raw, _ := strings.Cut(pair, "=")
		out = append(out, raw)
		if dec, err := url.QueryUnescape(raw); err == nil {
			out = append(out, dec)
		}
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			dec = seg
		}
		if tokenLike(dec) {
			out = append(out, seg, dec)
		}
	}
	return out
}

// allDigits reports whether s is a number (a port, an IPv4 byte).
func allDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// tokenLike reports whether a path segment is likely a key: long, or
// not so short and with a digit.
func tokenLike(seg string) bool {
	return len(seg) >= 16 || len(seg) >= MinSecretLen && strings.ContainsAny(seg, "0123456789")
}

// encodings are the forms a fragment may take in a message: as is,
// query- and path-escaped, and hex-dumped. Upper- and lower-case hex
// need no form of their own: matching ignores ASCII case.
func encodings(f string) []string {
	return []string{f, url.QueryEscape(f), url.PathEscape(f), hex.EncodeToString([]byte(f))}
}

// lowerASCII lower-cases ASCII letters only, so that byte offsets in the
// result are those of s.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
