package edge

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// coding is a content coding the edge can send (RFC 9110 §8.4.1).
type coding uint8

const (
	codingIdentity coding = iota
	codingGzip
	codingBrotli
	numCodings
)

// offer is the set of codings a response has, one bit per coding.
type offer uint8

func (o offer) has(c coding) bool { return o&(1<<c) != 0 }

// Content-Encoding values, and the suffix each variant adds inside the
// identity ETag's quotes.
var (
	codingNames = [numCodings]string{codingGzip: "gzip", codingBrotli: "br"}
	etagSuffix  = [numCodings]string{codingGzip: "-gz", codingBrotli: "-br"}
)

// minCompressBytes is the shortest body worth compressing: below it the
// saving is a few bytes, less than the headers a variant adds.
const minCompressBytes = 256

// negotiate picks the coding of the answer from the request's
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
func negotiate(fields []string, on offer) coding {
	if len(fields) == 0 || on == 1<<codingIdentity {
		return codingIdentity
	}
	w, ok := parseAcceptEncoding(fields)
	if !ok {
		return codingIdentity
	}
	best, bestQ := codingIdentity, 0
	for _, c := range [...]coding{codingBrotli, codingGzip} {
		if !on.has(c) {
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
	if best == codingIdentity {
		return codingIdentity
	}
	id := w.q[codingIdentity]
	if id < 0 {
		id = w.star
	}
	if id > bestQ {
		return codingIdentity
	}
	return best
}

// weights are the weights (0–1000) an Accept-Encoding field gives the
// codings the edge knows and "*"; -1 when not listed.
type weights struct {
	q    [numCodings]int
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
	w = weights{q: [numCodings]int{-1, -1, -1}, star: -1}
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
				slot = &w.q[codingGzip]
			case strings.EqualFold(name, "br"):
				slot = &w.q[codingBrotli]
			case strings.EqualFold(name, "identity"):
				slot = &w.q[codingIdentity]
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

// Compressors are reused: their state (about a megabyte at these
// levels) would otherwise be allocated for every body.
var (
	gzipWriters = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestCompression) // a valid level: never an error
		return zw
	}}
	brotliWriters = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: brotli.BestCompression, LGWin: brotliWindow})
	}}
	brotliLargeWriters = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: brotliLargeQuality, LGWin: brotliWindow})
	}}
)

// Brotli's best quality (11) runs at about 1.6 MB/s here: 56 ms for a
// 35 KB history body, and a market change renders some 25 of them. A body
// of brotliLargeBytes or more is compressed at brotliLargeQuality instead,
// tens of times faster for a few percent more bytes; the small bodies,
// the most requested, keep the best quality.
const (
	brotliLargeBytes   = 8 << 10
	brotliLargeQuality = 7
)

// brotliWindow is the brotli window (2^16 = 64 KiB), the largest distance
// a match can reach back: every body of the API fits in it (the OpenAPI
// document, the largest, is about 40 KiB).
const brotliWindow = 16

// compressBody returns body in coding c at the library's best compression
// (brotli: see brotliLargeBytes) once per change of a body, never per request, or
// nil when that is not smaller than body. The output depends only on the
// body (no timestamp, no name), so each variant of a body is the same
// bytes every time it is rendered by the same build.
func compressBody(c coding, body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body))
	var w interface {
		io.Writer
		Close() error
	}
	switch c {
	case codingGzip:
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(&buf)
		w = zw
	case codingBrotli:
		pool := &brotliWriters
		if len(body) >= brotliLargeBytes {
			pool = &brotliLargeWriters
		}
		bw := pool.Get().(*brotli.Writer)
		defer pool.Put(bw)
		bw.Reset(&buf)
		w = bw
	default:
		return nil
	}
	if _, err := w.Write(body); err != nil || w.Close() != nil || buf.Len() >= len(body) {
		return nil
	}
	return bytes.Clone(buf.Bytes())
}
