package edge

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/conneg/connegtest"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/lifecycle"
)

// TestCompressOnlyWhereItPays: bodies under minCompressBytes, bodies that
// do not shrink and non-200 answers have no variant; a body that is the
// same as the previous render's keeps its compressed bytes (compressed
// once per change).
func TestCompressOnlyWhereItPays(t *testing.T) {
	info := answer.DataInfo{}
	small := answer.NewOK(answer.ContentJSON, "public", bytes.Repeat([]byte("a"), answer.MinCompressBytes-1), info)
	small.Compress(nil)
	if small.Codings != 1<<answer.CodingIdentity {
		t.Errorf("a %d-byte body has variants %03b", len(small.Body), small.Codings)
	}
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	noise := answer.NewOK(answer.ContentJSON, "public", random, info)
	noise.Compress(nil)
	if noise.Codings != 1<<answer.CodingIdentity {
		t.Errorf("random bytes have variants %03b", noise.Codings)
	}
	e := answer.NewError(http.StatusServiceUnavailable, answer.CodeDataUnavailable, strings.Repeat("x", 1000), 0)
	e.Compress(nil)
	if e.Codings != 1<<answer.CodingIdentity {
		t.Errorf("an error answer has variants %03b", e.Codings)
	}

	body := bytes.Repeat([]byte(`{"a":1},`), 64)
	first := answer.NewOK(answer.ContentJSON, "public", body, info)
	first.Compress(nil)
	if first.Codings != connegtest.AllCodings {
		t.Fatalf("a compressible body has variants %03b", first.Codings)
	}
	again := answer.NewOK(answer.ContentJSON, "public", bytes.Clone(body), info)
	again.Compress(first)
	changed := answer.NewOK(answer.ContentJSON, "public", append(bytes.Clone(body), ' '), info)
	changed.Compress(first)
	for _, c := range []answer.Coding{answer.CodingGzip, answer.CodingBrotli} {
		if &again.Variants[c].Body[0] != &first.Variants[c].Body[0] {
			t.Errorf("%s: the same body was compressed again", connegtest.Name(c))
		}
		if &changed.Variants[c].Body[0] == &first.Variants[c].Body[0] {
			t.Errorf("%s: a changed body kept the old compressed bytes", connegtest.Name(c))
		}
		if got := decompress(t, c, changed.Variants[c].Body); !bytes.Equal(got, changed.Body) {
			t.Errorf("%s: the new variant does not decode to the new body", connegtest.Name(c))
		}
	}
}

// TestNegotiationOverHTTP is the negotiation matrix over real HTTP on
// loopback, through the edge's public server: for every Accept-Encoding of
// negotiationCases, on every JSON path, GET answers the chosen coding with
// its Content-Encoding, Content-Length, Vary and per-variant ETag, and a
// body that decodes byte for byte to the identity body; HEAD has the same
// headers and no body; If-None-Match gives 304 for the ETag of the
// representation asked for, and 200 for another's. The plain-text
// supply answers are never compressed.
func TestNegotiationOverHTTP(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	base := servePublic(t, h)
	// DisableCompression: Go's client would otherwise ask for gzip itself
	// and hide Content-Encoding.
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(c.CloseIdleConnections)
	do := func(method, path string, fields []string, inm string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fields != nil {
			req.Header["Accept-Encoding"] = fields
		}
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}

	jsonPaths := []string{view.PathSupply, view.PathCoinGeckoSupply, view.PathPrice, view.PathHolders, view.PathTokenMetadata, view.PathExchanges,
		view.PathMarket, view.PathMarketData, view.PathMarketPairs, view.PathOpenAPI}
	for _, p := range jsonPaths {
		ident, identBody := do(http.MethodGet, p, nil, "")
		if ident.StatusCode != http.StatusOK || len(identBody) < answer.MinCompressBytes {
			t.Fatalf("%s: %d with %d bytes; the matrix needs a body worth compressing", p, ident.StatusCode, len(identBody))
		}
		identETag := ident.Header.Get("Etag")
		for _, tc := range connegtest.Cases {
			name := fmt.Sprintf("%s %q", p, tc.Fields)
			resp, body := do(http.MethodGet, p, tc.Fields, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", name, resp.StatusCode)
			}
			wantEnc, wantETag := "", identETag
			if tc.Want != answer.CodingIdentity {
				wantEnc = answer.CodingNames[tc.Want]
				wantETag = identETag[:len(identETag)-1] + answer.EtagSuffix[tc.Want] + `"`
			}
			hd := resp.Header
			if got := hd.Values("Content-Encoding"); strings.Join(got, ",") != wantEnc {
				t.Errorf("%s: Content-Encoding %q, want %q", name, got, wantEnc)
			}
			if got := hd.Values("Vary"); len(got) != 1 || got[0] != "Accept-Encoding" {
				t.Errorf("%s: Vary %q", name, got)
			}
			if hd.Get("Etag") != wantETag {
				t.Errorf("%s: ETag %s, want %s", name, hd.Get("Etag"), wantETag)
			}
			if hd.Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Errorf("%s: Content-Length %s for %d bytes", name, hd.Get("Content-Length"), len(body))
			}
			if tc.Want != answer.CodingIdentity && len(body) >= len(identBody) {
				t.Errorf("%s: %s body of %d bytes, identity %d", name, wantEnc, len(body), len(identBody))
			}
			if got := decompress(t, tc.Want, body); !bytes.Equal(got, identBody) {
				t.Errorf("%s: the body does not decode to the identity body", name)
			}
			for _, k := range []string{"Content-Type", "Cache-Control", "Last-Modified", "X-Data-Updated-At", "X-Data-Stale"} {
				if hd.Get(k) != ident.Header.Get(k) {
					t.Errorf("%s: %s %q, identity has %q", name, k, hd.Get(k), ident.Header.Get(k))
				}
			}

			head, headBody := do(http.MethodHead, p, tc.Fields, "")
			if head.StatusCode != http.StatusOK || len(headBody) != 0 {
				t.Errorf("HEAD %s: %d with %d bytes", name, head.StatusCode, len(headBody))
			}
			for _, k := range []string{"Content-Encoding", "Content-Length", "Etag", "Vary", "Content-Type", "Last-Modified"} {
				if head.Header.Get(k) != hd.Get(k) {
					t.Errorf("HEAD %s: %s %q, GET has %q", name, k, head.Header.Get(k), hd.Get(k))
				}
			}

			nm, nmBody := do(http.MethodGet, p, tc.Fields, wantETag)
			if nm.StatusCode != http.StatusNotModified || len(nmBody) != 0 {
				t.Errorf("%s If-None-Match %s: %d with %d bytes, want 304", name, wantETag, nm.StatusCode, len(nmBody))
			}
			if nm.Header.Get("Etag") != wantETag || nm.Header.Get("Vary") != "Accept-Encoding" ||
				nm.Header.Get("Content-Encoding") != "" || nm.Header.Get("Cache-Control") != hd.Get("Cache-Control") {
				t.Errorf("%s 304 headers: %v", name, nm.Header)
			}
			// The ETag of another representation does not match this one.
			for _, other := range []answer.Coding{answer.CodingIdentity, answer.CodingGzip, answer.CodingBrotli} {
				if other == tc.Want {
					continue
				}
				otherETag := identETag[:len(identETag)-1] + answer.EtagSuffix[other] + `"`
				if r, _ := do(http.MethodGet, p, tc.Fields, otherETag); r.StatusCode != http.StatusOK || r.Header.Get("Etag") != wantETag {
					t.Errorf("%s If-None-Match %s (%s): %d %s, want 200 %s", name, otherETag, connegtest.Name(other),
						r.StatusCode, r.Header.Get("Etag"), wantETag)
				}
			}
		}
	}

	// The plain-text supply answers and the per-request ones are never
	// compressed and do not vary.
	for _, p := range []string{view.PathTotalSupply, view.PathCirculatingSupply, view.PathMaxSupply, view.PathHealth, view.PathStatus} {
		resp, _ := do(http.MethodGet, p, []string{"br, gzip"}, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "" {
			t.Errorf("%s: %d, Content-Encoding %q, Vary %q: want identity without Vary", p, resp.StatusCode,
				resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
		}
	}
	// An error of a path with variants is identity, and says Vary.
	empty := newHarness(t, nil)
	if resp, body := do2(t, c, servePublic(t, empty)+view.PathPrice, "br, gzip"); resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "Accept-Encoding" || !bytes.HasPrefix(body, []byte(`{"error"`)) {
		t.Errorf("503 of %s: Content-Encoding %q, Vary %q, body %.40s", view.PathPrice, resp.Header.Get("Content-Encoding"),
			resp.Header.Get("Vary"), body)
	}
}

// TestCompressedSizes renders the full scenario and reports each body's
// size identity / gzip / br (go test -v -run CompressedSizes): bodies of
// 1.5 KiB or more must shrink at least 2×, and brotli be no larger than gzip;
// the qualities chosen for CPU (answer.gzipLevel, brotliQuality) cost at
// most 12 % of the bytes of each library's best over the small bodies
// together, the ones rendered every second.
func TestCompressedSizes(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	v := h.srv.mirror.View()
	var small, best [2]int // gzip, br
	var tbl strings.Builder
	tbl.WriteString("| path | identity | gzip | br |\n|---|---|---|---|\n")
	for i, rt := range view.RenderedRoutes {
		r := v.Routes[i]
		size := func(c answer.Coding) string {
			if x := r.Variants[c]; x != nil {
				return strconv.Itoa(len(x.Body))
			}
			return "—"
		}
		fmt.Fprintf(&tbl, "| %s | %d | %s | %s |\n", rt.Path, len(r.Body), size(answer.CodingGzip), size(answer.CodingBrotli))
		if len(r.Body) >= 1536 {
			for _, c := range []answer.Coding{answer.CodingGzip, answer.CodingBrotli} {
				if x := r.Variants[c]; x == nil || 2*len(x.Body) > len(r.Body) {
					t.Errorf("%s: %s does not halve a %d-byte body", rt.Path, connegtest.Name(c), len(r.Body))
				}
			}
		}
		if gz, br := r.Variants[answer.CodingGzip], r.Variants[answer.CodingBrotli]; gz != nil && br != nil && len(br.Body) > len(gz.Body) {
			t.Errorf("%s: br %d bytes, gzip %d", rt.Path, len(br.Body), len(gz.Body))
		}
		if gz, br := r.Variants[answer.CodingGzip], r.Variants[answer.CodingBrotli]; gz != nil && br != nil && len(r.Body) < 8<<10 {
			small[0] += len(gz.Body)
			small[1] += len(br.Body)
			best[0] += len(bestOf(t, answer.CodingGzip, r.Body))
			best[1] += len(bestOf(t, answer.CodingBrotli, r.Body))
		}
	}
	t.Log("\n" + tbl.String())
	t.Logf("small bodies: gzip %d bytes (best level %d), br %d bytes (best quality %d)", small[0], best[0], small[1], best[1])
	for c := range 2 {
		if best[c] == 0 || float64(small[c]) > 1.12*float64(best[c]) {
			t.Errorf("%s: %d bytes for the small bodies, the library's best %d (bound 1.12×)", []string{"gzip", "br"}[c], small[c], best[c])
		}
	}
}

// bestOf compresses body at the library's best (gzip 9, brotli 11).
func bestOf(t *testing.T, c answer.Coding, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	if c == answer.CodingGzip {
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	} else {
		w = brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: brotli.BestCompression, LGWin: 16})
	}
	if _, err := w.Write(body); err != nil || w.Close() != nil {
		t.Fatal("compress failed")
	}
	return buf.Bytes()
}

// servePublic runs h's handler behind the edge's own public server on a
// loopback port until the test ends, and returns its base URL.
func servePublic(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runPublic(t, h.srv.apiServer(ln))
	return "http://" + ln.Addr().String()
}

// runPublic serves s until the test ends.
func runPublic(t *testing.T, s *lifecycle.Server) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Srv.Serve(s.Listener)
	}()
	t.Cleanup(func() {
		_ = s.Srv.Close()
		<-done
	})
}

func do2(t *testing.T, c *http.Client, url, acceptEncoding string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// decompress decodes body in coding c with a decoder other than the
// encoder's where there is one (the standard library's gzip).
func decompress(t *testing.T, c answer.Coding, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch c {
	case answer.CodingIdentity:
		return body
	case answer.CodingGzip:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case answer.CodingBrotli:
		r = brotli.NewReader(bytes.NewReader(body))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", connegtest.Name(c), err)
	}
	return out
}
