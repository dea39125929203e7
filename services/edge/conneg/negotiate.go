// Package conneg reads the request header fields an answer is chosen by:
// Accept-Encoding (which coding of the body) and If-None-Match (whether
// the client holds it already). Pure parsers of client bytes, with no
// dependency on the server, so that their fuzz targets build small.
package conneg

import (
	"strings"

	"github.com/tokendata/tokendata/services/edge/answer"
)

// Negotiate picks the coding of the answer from the request's
// Accept-Encoding field lines (RFC 9110 §12.5.3) among those on offer;
// identity is always on offer. It never fails and never allocates:
//
//   - no Accept-Encoding field, an empty one, or a malformed one (an
//     element that is not a token with at most a weight "q=" qvalue):
//     identity;
//   - tokens are case-insensitive, "x-gzip" is "gzip", "*" stands for every
//     coding not listed, and q=0 refuses a coding; a coding listed twice
//     takes its lowest weight;
//   - the coding on offer with the highest weight above zero wins, br
//     before gzip at equal weights; identity wins over it only when the
//     client gives identity (or "*" without identity listed) a strictly
//     higher weight;
//   - when nothing on offer is acceptable (identity;q=0 too), identity is
//     sent all the same: the API answers, it does not refuse (no 406/415).
func Negotiate(fields []string, on answer.Offer) answer.Coding {
	if len(fields) == 0 || on == 1<<answer.CodingIdentity {
		return answer.CodingIdentity
	}
	w, ok := parseAcceptEncoding(fields)
	if !ok {
		return answer.CodingIdentity
	}
	best, bestQ := answer.CodingIdentity, 0
	for _, c := range [...]answer.Coding{answer.CodingBrotli, answer.CodingGzip} {
		if !on.Has(c) {
			continue
		}
		q := w.q[c]
		if q < 0 {
			q = w.star
		}
		if q > bestQ {
			best, bestQ = c, q
		}
	}
	if best == answer.CodingIdentity {
		return answer.CodingIdentity
	}
	id := w.q[answer.CodingIdentity]
	if id < 0 {
		id = w.star
	}
	if id > bestQ {
		return answer.CodingIdentity
	}
	return best
}

// weights are the weights (0–1000) an Accept-Encoding field gives the
// codings the edge knows and "*"; -1 when not listed.
type weights struct {
	q    [answer.NumCodings]int
	star int
}

// parseAcceptEncoding parses Accept-Encoding field lines:
//
//	Accept-Encoding = #( codings [ weight ] )
//	codings         = content-coding / "identity" / "*"
//	weight          = OWS ";" OWS "q=" qvalue
//	qvalue          = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
//
// Empty list elements are allowed (RFC 9110 §5.6.1). ok is false when
// any element does not follow the grammar.
func parseAcceptEncoding(fields []string) (w weights, ok bool) {
	w = weights{q: [answer.NumCodings]int{-1, -1, -1}, star: -1}
	for _, f := range fields {
		for f != "" {
			var elem string
			if i := strings.IndexByte(f, ','); i >= 0 {
				elem, f = f[:i], f[i+1:]
			} else {
				elem, f = f, ""
			}
			elem = trimOWS(elem)
			if elem == "" {
				continue
			}
			name, q, ok := parseCodingElement(elem)
			if !ok {
				return w, false
			}
			var slot *int
			switch {
			case name == "*":
				slot = &w.star
			case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
				slot = &w.q[answer.CodingGzip]
			case strings.EqualFold(name, "br"):
				slot = &w.q[answer.CodingBrotli]
			case strings.EqualFold(name, "identity"):
				slot = &w.q[answer.CodingIdentity]
			default:
				continue // a coding the edge does not offer
			}
			if *slot < 0 || q < *slot {
				*slot = q
			}
		}
	}
	return w, true
}

// parseCodingElement parses one trimmed, non-empty list element: a token
// and an optional weight. q is 1000 without a weight.
func parseCodingElement(elem string) (name string, q int, ok bool) {
	n := 0
	for n < len(elem) && isTchar(elem[n]) {
		n++
	}
	if n == 0 {
		return "", 0, false
	}
	name, rest := elem[:n], trimOWS(elem[n:])
	if rest == "" {
		return name, 1000, true
	}
	if rest[0] != ';' {
		return "", 0, false
	}
	rest = trimOWS(rest[1:])
	if len(rest) < 2 || (rest[0] != 'q' && rest[0] != 'Q') || rest[1] != '=' {
		return "", 0, false
	}
	q, ok = parseQValue(rest[2:])
	return name, q, ok
}

// parseQValue parses a qvalue into thousandths.
func parseQValue(s string) (int, bool) {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	q := int(s[0]-'0') * 1000
	s = s[1:]
	if s == "" {
		return q, true
	}
	if s[0] != '.' || len(s) > 4 {
		return 0, false
	}
	scale := 100
	for i := 1; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' || (q == 1000 && d != '0') {
			return 0, false
		}
		q += int(d-'0') * scale
		scale /= 10
	}
	return q, true
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// isTchar reports whether b may appear in a token (RFC 9110 §5.6.2).
func isTchar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
