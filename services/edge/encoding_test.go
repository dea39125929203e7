package edge

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"fmt"
	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

const allCodings = answer.Offer(1<<answer.CodingIdentity | 1<<answer.CodingGzip | 1<<answer.CodingBrotli)

// negotiationCases are Accept-Encoding field lines (nil: no field) and
// the coding the edge must pick when it has gzip and br.
var negotiationCases = []struct {
	fields []string
	want   answer.Coding
}{
	{nil, answer.CodingIdentity},
	{[]string{""}, answer.CodingIdentity},
	{[]string{"gzip"}, answer.CodingGzip},
	{[]string{"br"}, answer.CodingBrotli},
	{[]string{"gzip, deflate, br, zstd"}, answer.CodingBrotli},
	{[]string{"gzip, br"}, answer.CodingBrotli},
	{[]string{"br;q=0.5, gzip"}, answer.CodingGzip},
	{[]string{"gzip;q=0.8, br;q=0.8"}, answer.CodingBrotli},
	{[]string{"gzip;q=0.801, br;q=0.8"}, answer.CodingGzip},
	{[]string{"gzip;q=1.000, br;q=0.999"}, answer.CodingGzip},
	{[]string{"BR;Q=1, GZIP"}, answer.CodingBrotli},
	{[]string{"Gzip"}, answer.CodingGzip},
	{[]string{"x-gzip"}, answer.CodingGzip},
	{[]string{"identity"}, answer.CodingIdentity},
	{[]string{"identity, gzip"}, answer.CodingGzip},
	{[]string{"identity;q=1, gzip;q=0.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.5"}, answer.CodingGzip},
	{[]string{"*"}, answer.CodingBrotli},
	{[]string{"*;q=0"}, answer.CodingIdentity},
	{[]string{"*;q=0.5, identity"}, answer.CodingIdentity},
	{[]string{"br;q=0, *"}, answer.CodingGzip},
	{[]string{"gzip;q=0"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.000, br;q=0"}, answer.CodingIdentity},
	{[]string{"gzip, gzip;q=0"}, answer.CodingIdentity}, // listed twice: the lower weight
	{[]string{"x-gzip;q=0, gzip"}, answer.CodingIdentity},
	{[]string{"identity;q=0"}, answer.CodingIdentity}, // nothing acceptable: identity all the same
	{[]string{"deflate, zstd, compress"}, answer.CodingIdentity},
	{[]string{" , ,gzip ,"}, answer.CodingGzip},
	{[]string{"gzip\t;\tq=0.5"}, answer.CodingGzip},
	{[]string{"gzip;q=0.1", "br;q=0.2"}, answer.CodingBrotli}, // two field lines
	{[]string{"br", "gzip;q=0"}, answer.CodingBrotli},
	// malformed: identity, never an error
	{[]string{"gzip;q=2"}, answer.CodingIdentity},
	{[]string{"gzip;q=1.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.5555"}, answer.CodingIdentity},
	{[]string{"gzip;q=.5"}, answer.CodingIdentity},
	{[]string{"gzip;q="}, answer.CodingIdentity},
	{[]string{"gzip;q"}, answer.CodingIdentity},
	{[]string{"gzip;q = 0.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=abc"}, answer.CodingIdentity},
	{[]string{"br;level=5"}, answer.CodingIdentity},
	{[]string{"gzip br"}, answer.CodingIdentity},
	{[]string{`"gzip"`}, answer.CodingIdentity},
	{[]string{"gzip;"}, answer.CodingIdentity},
	{[]string{"gzip", "br;q=x"}, answer.CodingIdentity},
	{[]string{"gzïp, br"}, answer.CodingIdentity},
}

func TestNegotiate(t *testing.T) {
	for _, c := range negotiationCases {
		if got := negotiate(c.fields, allCodings); got != c.want {
			t.Errorf("Accept-Encoding %q: %s, want %s", c.fields, codingName(got), codingName(c.want))
		}
		// With gzip alone on offer, br is never sent.
		want := c.want
		if want == answer.CodingBrotli {
			want = negotiateRef(c.fields, 1<<answer.CodingIdentity|1<<answer.CodingGzip)
		}
		if got := negotiate(c.fields, 1<<answer.CodingIdentity|1<<answer.CodingGzip); got != want {
			t.Errorf("Accept-Encoding %q, gzip on offer: %s, want %s", c.fields, codingName(got), codingName(want))
		}
		if got := negotiate(c.fields, 1<<answer.CodingIdentity); got != answer.CodingIdentity {
			t.Errorf("Accept-Encoding %q, identity only: %s", c.fields, codingName(got))
		}
	}
}

// TestNegotiateAllocates nothing: it runs on every request of a
// compressible path.
func TestNegotiateAllocatesNothing(t *testing.T) {
	fields := []string{"gzip;q=0.8, deflate, BR;q=0.9, identity;q=0.1, *;q=0"}
	if n := testing.AllocsPerRun(100, func() { negotiate(fields, allCodings) }); n != 0 {
		t.Fatalf("negotiate: %v allocations", n)
	}
}

// FuzzAcceptEncoding checks negotiate against negotiateRef, a second
// implementation written differently (regular expressions over split
// elements), on arbitrary field lines: the same choice, never a coding
// that is not on offer, and never one the field does not accept.
func FuzzAcceptEncoding(f *testing.F) {
	for _, c := range negotiationCases {
		f.Add(strings.Join(c.fields, "\n"), uint8(allCodings))
	}
	f.Add("br;q=0.001, gzip;q=0.0009", uint8(allCodings))
	f.Add("*;q=0.3, br;q=0.2, identity;q=0.3", uint8(allCodings))
	f.Fuzz(func(t *testing.T, field string, on uint8) {
		o := answer.Offer(on)&allCodings | 1<<answer.CodingIdentity
		var fields []string
		if field != "" {
			fields = strings.Split(field, "\n")
		}
		got := negotiate(fields, o)
		if !o.Has(got) {
			t.Fatalf("%q: %s is not on offer (%03b)", fields, codingName(got), o)
		}
		if want := negotiateRef(fields, o); got != want {
			t.Fatalf("%q on offer %03b: %s, the reference says %s", fields, o, codingName(got), codingName(want))
		}
	})
}

var (
	refElement = regexp.MustCompile(`^([!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+)(?:[ \t]*;[ \t]*[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?))?$`)
)

// negotiateRef is the reference negotiation of the fuzz test: RFC 9110
// §12.5.3 as the edge reads it, done the slow way.
func negotiateRef(fields []string, o answer.Offer) answer.Coding {
	if len(fields) == 0 {
		return answer.CodingIdentity
	}
	q := map[string]float64{}
	for _, f := range fields {
		for _, el := range strings.Split(f, ",") {
			el = strings.Trim(el, " \t")
			if el == "" {
				continue
			}
			m := refElement.FindStringSubmatch(el)
			if m == nil {
				return answer.CodingIdentity
			}
			name := strings.ToLower(m[1])
			if name == "x-gzip" {
				name = "gzip"
			}
			w := 1.0
			if m[2] != "" {
				w, _ = strconv.ParseFloat(m[2], 64)
			}
			if old, ok := q[name]; !ok || w < old {
				q[name] = w
			}
		}
	}
	weight := func(name string) float64 {
		if w, ok := q[name]; ok {
			return w
		}
		if w, ok := q["*"]; ok {
			return w
		}
		return -1
	}
	best, bestQ := answer.CodingIdentity, 0.0
	for _, c := range []struct {
		c    answer.Coding
		name string
	}{{answer.CodingBrotli, "br"}, {answer.CodingGzip, "gzip"}} {
		if w := weight(c.name); o.Has(c.c) && w > bestQ+1e-9 {
			best, bestQ = c.c, w
		}
	}
	if best != answer.CodingIdentity && weight("identity") > bestQ+1e-9 {
		return answer.CodingIdentity
	}
	return best
}

func codingName(c answer.Coding) string {
	if c == answer.CodingIdentity {
		return "identity"
	}
	return answer.CodingNames[c]
}

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
	if first.Codings != allCodings {
		t.Fatalf("a compressible body has variants %03b", first.Codings)
	}
	again := answer.NewOK(answer.ContentJSON, "public", bytes.Clone(body), info)
	again.Compress(first)
	changed := answer.NewOK(answer.ContentJSON, "public", append(bytes.Clone(body), ' '), info)
	changed.Compress(first)
	for _, c := range []answer.Coding{answer.CodingGzip, answer.CodingBrotli} {
		if &again.Variants[c].Body[0] != &first.Variants[c].Body[0] {
			t.Errorf("%s: the same body was compressed again", codingName(c))
		}
		if &changed.Variants[c].Body[0] == &first.Variants[c].Body[0] {
			t.Errorf("%s: a changed body kept the old compressed bytes", codingName(c))
		}
		if got := decompress(t, c, changed.Variants[c].Body); !bytes.Equal(got, changed.Body) {
			t.Errorf("%s: the new variant does not decode to the new body", codingName(c))
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
		for _, tc := range negotiationCases {
			name := fmt.Sprintf("%s %q", p, tc.fields)
			resp, body := do(http.MethodGet, p, tc.fields, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", name, resp.StatusCode)
			}
			wantEnc, wantETag := "", identETag
			if tc.want != answer.CodingIdentity {
				wantEnc = answer.CodingNames[tc.want]
				wantETag = identETag[:len(identETag)-1] + answer.EtagSuffix[tc.want] + `"`
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
			if tc.want != answer.CodingIdentity && len(body) >= len(identBody) {
				t.Errorf("%s: %s body of %d bytes, identity %d", name, wantEnc, len(body), len(identBody))
			}
			if got := decompress(t, tc.want, body); !bytes.Equal(got, identBody) {
				t.Errorf("%s: the body does not decode to the identity body", name)
			}
			for _, k := range []string{"Content-Type", "Cache-Control", "Last-Modified", "X-Data-Updated-At", "X-Data-Stale"} {
				if hd.Get(k) != ident.Header.Get(k) {
					t.Errorf("%s: %s %q, identity has %q", name, k, hd.Get(k), ident.Header.Get(k))
				}
			}

			head, headBody := do(http.MethodHead, p, tc.fields, "")
			if head.StatusCode != http.StatusOK || len(headBody) != 0 {
				t.Errorf("HEAD %s: %d with %d bytes", name, head.StatusCode, len(headBody))
			}
			for _, k := range []string{"Content-Encoding", "Content-Length", "Etag", "Vary", "Content-Type", "Last-Modified"} {
				if head.Header.Get(k) != hd.Get(k) {
					t.Errorf("HEAD %s: %s %q, GET has %q", name, k, head.Header.Get(k), hd.Get(k))
				}
			}

			nm, nmBody := do(http.MethodGet, p, tc.fields, wantETag)
			if nm.StatusCode != http.StatusNotModified || len(nmBody) != 0 {
				t.Errorf("%s If-None-Match %s: %d with %d bytes, want 304", name, wantETag, nm.StatusCode, len(nmBody))
			}
			if nm.Header.Get("Etag") != wantETag || nm.Header.Get("Vary") != "Accept-Encoding" ||
				nm.Header.Get("Content-Encoding") != "" || nm.Header.Get("Cache-Control") != hd.Get("Cache-Control") {
				t.Errorf("%s 304 headers: %v", name, nm.Header)
			}
			// The ETag of another representation does not match this one.
			for _, other := range []answer.Coding{answer.CodingIdentity, answer.CodingGzip, answer.CodingBrotli} {
				if other == tc.want {
					continue
				}
				otherETag := identETag[:len(identETag)-1] + answer.EtagSuffix[other] + `"`
				if r, _ := do(http.MethodGet, p, tc.fields, otherETag); r.StatusCode != http.StatusOK || r.Header.Get("Etag") != wantETag {
					t.Errorf("%s If-None-Match %s (%s): %d %s, want 200 %s", name, otherETag, codingName(other),
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
// 1.5 KiB or more must shrink at least 2×, and brotli be no larger than gzip.
func TestCompressedSizes(t *testing.T) {
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	v := h.srv.view.Load()
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
					t.Errorf("%s: %s does not halve a %d-byte body", rt.Path, codingName(c), len(r.Body))
				}
			}
		}
		if gz, br := r.Variants[answer.CodingGzip], r.Variants[answer.CodingBrotli]; gz != nil && br != nil && len(br.Body) > len(gz.Body) {
			t.Errorf("%s: br %d bytes, gzip %d", rt.Path, len(br.Body), len(gz.Body))
		}
	}
	t.Log("\n" + tbl.String())
}

// servePublic runs h's handler behind the edge's own public server on a
// loopback port until the test ends, and returns its base URL.
func servePublic(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := h.srv.apiServer(ln)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Srv.Serve(s.Listener)
	}()
	t.Cleanup(func() {
		_ = s.Srv.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
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
		t.Fatalf("%s: %v", codingName(c), err)
	}
	return out
}
