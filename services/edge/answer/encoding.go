package answer

import (
	"bytes"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// coding is a content coding the edge can send (RFC 9110 §8.4.1).
type Coding uint8

const (
	CodingIdentity Coding = iota
	CodingGzip
	CodingBrotli
	NumCodings
)

// offer is the set of codings a response has, one bit per coding.
type Offer uint8

func (o Offer) Has(c Coding) bool { return o&(1<<c) != 0 }

// Content-Encoding values, and the suffix each variant adds inside the
// identity ETag's quotes.
var (
	CodingNames = [NumCodings]string{CodingGzip: "gzip", CodingBrotli: "br"}
	EtagSuffix  = [NumCodings]string{CodingGzip: "-gz", CodingBrotli: "-br"}
)

// minCompressBytes is the shortest body worth compressing: below it the
// saving is a few bytes, less than the headers a variant adds.
const MinCompressBytes = 256

// Compressors are reused: their state (about a megabyte at these
// levels) would otherwise be allocated for every body.
var (
	gzipWriters = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(io.Discard, gzipLevel) // a valid level: never an error
		return zw
	}}
	brotliWriters = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindow})
	}}
	brotliLargeWriters = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: brotliLargeQuality, LGWin: brotliWindow})
	}}
)

// How hard a body is compressed. A body is compressed once per change,
// never per request, but the bodies made of the market and supply change
// every second or so (twice when a stale-after is crossed in between), on
// the cores that serve the requests. Brotli's best qualities (10, 11)
// spend 50 to 100 times the CPU of quality 9 for about 9 % fewer bytes on
// these small bodies (the nine of them over 256 bytes: 4,402 bytes at 11,
// 4,803 at 9, some 45 bytes a body); gzip's level 9 three times the CPU of
// level 6 for 0.6 %. BenchmarkRender/new-market-supply, the render after a
// new market and supply document: 72-85 ms at 11 and 9, 9-13 ms at 9 and
// 6. A body of brotliLargeBytes or more (the OpenAPI document, the
// history bodies) is compressed at brotliLargeQuality, cheaper again per
// byte for a few percent more bytes.
const (
	gzipLevel          = 6
	brotliQuality      = 9
	brotliLargeBytes   = 8 << 10
	brotliLargeQuality = 7
)

// brotliWindow is the brotli window (2^16 = 64 KiB), the largest distance
// a match can reach back: every body of the API fits in it (the OpenAPI
// document, the largest, is about 40 KiB).
const brotliWindow = 16

// compressBody returns body in coding c (see gzipLevel) once per change of a body, never per request, or
// nil when that is not smaller than body. The output depends only on the
// body (no timestamp, no name), so each variant of a body is the same
// bytes every time it is rendered by the same build.
func compressBody(c Coding, body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body))
	var w interface {
		io.Writer
		Close() error
	}
	switch c {
	case CodingGzip:
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(&buf)
		w = zw
	case CodingBrotli:
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
