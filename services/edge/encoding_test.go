package edge

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

const allCodings = offer(1<<codingIdentity | 1<<codingGzip | 1<<codingBrotli)

// negotiationCases are Accept-Encoding field lines (nil: no field) and
// the coding the edge must pick when it has gzip and br.
var negotiationCases = []struct {
	fields []string
	want   coding
}{
	{nil, codingIdentity},
	{[]string{""}, codingIdentity},
	{[]string{"gzip"}, codingGzip},
	{[]string{"br"}, codingBrotli},
	{[]string{"gzip, deflate, br, zstd"}, codingBrotli},
	{[]string{"gzip, br"}, codingBrotli},
	{[]string{"br;q=0.5, gzip"}, codingGzip},
	{[]string{"gzip;q=0.8, br;q=0.8"}, codingBrotli},
	{[]string{"gzip;q=0.801, br;q=0.8"}, codingGzip},
	{[]string{"gzip;q=1.000, br;q=0.999"}, codingGzip},
	{[]string{"BR;Q=1, GZIP"}, codingBrotli},
	{[]string{"Gzip"}, codingGzip},
	{[]string{"x-gzip"}, codingGzip},
	{[]string{"identity"}, codingIdentity},
	{[]string{"identity, gzip"}, codingGzip},
	{[]string{"identity;q=1, gzip;q=0.5"}, codingIdentity},
	{[]string{"gzip;q=0.5"}, codingGzip},
	{[]string{"*"}, codingBrotli},
	{[]string{"*;q=0"}, codingIdentity},
	{[]string{"*;q=0.5, identity"}, codingIdentity},
	{[]string{"br;q=0, *"}, codingGzip},
	{[]string{"gzip;q=0"}, codingIdentity},
	{[]string{"gzip;q=0.000, br;q=0"}, codingIdentity},
	{[]string{"gzip, gzip;q=0"}, codingIdentity}, // listed twice: the lower weight
	{[]string{"x-gzip;q=0, gzip"}, codingIdentity},
	{[]string{"identity;q=0"}, codingIdentity}, // nothing acceptable: identity all the same
	{[]string{"deflate, zstd, compress"}, codingIdentity},
	{[]string{" , ,gzip ,"}, codingGzip},
	{[]string{"gzip\t;\tq=0.5"}, codingGzip},
	{[]string{"gzip;q=0.1", "br;q=0.2"}, codingBrotli}, // two field lines
	{[]string{"br", "gzip;q=0"}, codingBrotli},
	// malformed: identity, never an error
	{[]string{"gzip;q=2"}, codingIdentity},
	{[]string{"gzip;q=1.5"}, codingIdentity},
	{[]string{"gzip;q=0.5555"}, codingIdentity},
	{[]string{"gzip;q=.5"}, codingIdentity},
	{[]string{"gzip;q="}, codingIdentity},
	{[]string{"gzip;q"}, codingIdentity},
	{[]string{"gzip;q = 0.5"}, codingIdentity},
	{[]string{"gzip;q=abc"}, codingIdentity},
	{[]string{"br;level=5"}, codingIdentity},
	{[]string{"gzip br"}, codingIdentity},
	{[]string{`"gzip"`}, codingIdentity},
	{[]string{"gzip;"}, codingIdentity},
	{[]string{"gzip", "br;q=x"}, codingIdentity},
	{[]string{"gzïp, br"}, codingIdentity},
}

func TestNegotiate(t *testing.T) {
	for _, c := range negotiationCases {
		if got := negotiate(c.fields, allCodings); got != c.want {
			t.Errorf("Accept-Encoding %q: %s, want %s", c.fields, codingName(got), codingName(c.want))
		}
		// With gzip alone on offer, br is never sent.
		want := c.want
		if want == codingBrotli {
			want = negotiateRef(c.fields, 1<<codingIdentity|1<<codingGzip)
		}
		if got := negotiate(c.fields, 1<<codingIdentity|1<<codingGzip); got != want {
			t.Errorf("Accept-Encoding %q, gzip on offer: %s, want %s", c.fields, codingName(got), codingName(want))
		}
		if got := negotiate(c.fields, 1<<codingIdentity); got != codingIdentity {
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
		o := offer(on)&allCodings | 1<<codingIdentity
		var fields []string
		if field != "" {
			fields = strings.Split(field, "\n")
		}
		got := negotiate(fields, o)
		if !o.has(got) {
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
func negotiateRef(fields []string, o offer) coding {
	if len(fields) == 0 {
		return codingIdentity
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
				return codingIdentity
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
	best, bestQ := codingIdentity, 0.0
	for _, c := range []struct {
		c    coding
		name string
	}{{codingBrotli, "br"}, {codingGzip, "gzip"}} {
		if w := weight(c.name); o.has(c.c) && w > bestQ+1e-9 {
			best, bestQ = c.c, w
		}
	}
	if best != codingIdentity && weight("identity") > bestQ+1e-9 {
		return codingIdentity
	}
	return best
}

func codingName(c coding) string {
	if c == codingIdentity {
		return "identity"
	}
	return codingNames[c]
}

// TestCompressOnlyWhereItPays: bodies under minCompressBytes, bodies that
// do not shrink and non-200 answers have no variant; a body that is the
// same as the previous render's keeps its compressed bytes (compressed
// once per change).
func TestCompressOnlyWhereItPays(t *testing.T) {
	info := dataInfo{}
	small := newOK(contentJSON, "public", bytes.Repeat([]byte("a"), minCompressBytes-1), info)
	small.compress(nil)
	if small.on != 1<<codingIdentity {
		t.Errorf("a %d-byte body has variants %03b", len(small.body), small.on)
	}
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	noise := newOK(contentJSON, "public", random, info)
	noise.compress(nil)
	if noise.on != 1<<codingIdentity {
		t.Errorf("random bytes have variants %03b", noise.on)
	}
	e := newError(http.StatusServiceUnavailable, codeDataUnavailable, strings.Repeat("x", 1000), 0)
	e.compress(nil)
	if e.on != 1<<codingIdentity {
		t.Errorf("an error answer has variants %03b", e.on)
	}

	body := bytes.Repeat([]byte(`{"a":1},`), 64)
	first := newOK(contentJSON, "public", body, info)
	first.compress(nil)
	if first.on != allCodings {
		t.Fatalf("a compressible body has variants %03b", first.on)
	}
	again := newOK(contentJSON, "public", bytes.Clone(body), info)
	again.compress(first)
	changed := newOK(contentJSON, "public", append(bytes.Clone(body), ' '), info)
	changed.compress(first)
	for _, c := range []coding{codingGzip, codingBrotli} {
		if &again.variants[c].body[0] != &first.variants[c].body[0] {
			t.Errorf("%s: the same body was compressed again", codingName(c))
		}
		if &changed.variants[c].body[0] == &first.variants[c].body[0] {
			t.Errorf("%s: a changed body kept the old compressed bytes", codingName(c))
		}
		if got := decompress(t, c, changed.variants[c].body); !bytes.Equal(got, changed.body) {
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

	jsonPaths := []string{PathSupply, PathCoinGeckoSupply, PathPrice, PathHolders, PathTokenMetadata, PathExchanges,
		PathMarket, PathMarketData, PathMarketPairs, PathOpenAPI}
	for _, p := range jsonPaths {
		ident, identBody := do(http.MethodGet, p, nil, "")
		if ident.StatusCode != http.StatusOK || len(identBody) < minCompressBytes {
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
			if tc.want != codingIdentity {
				wantEnc = codingNames[tc.want]
				wantETag = identETag[:len(identETag)-1] + etagSuffix[tc.want] + `"`
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
			if tc.want != codingIdentity && len(body) >= len(identBody) {
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
			for _, other := range []coding{codingIdentity, codingGzip, codingBrotli} {
				if other == tc.want {
					continue
				}
				otherETag := identETag[:len(identETag)-1] + etagSuffix[other] + `"`
				if r, _ := do(http.MethodGet, p, tc.fields, otherETag); r.StatusCode != http.StatusOK || r.Header.Get("Etag") != wantETag {
					t.Errorf("%s If-None-Match %s (%s): %d %s, want 200 %s", name, otherETag, codingName(other),
						r.StatusCode, r.Header.Get("Etag"), wantETag)
				}
			}
		}
	}

	// The plain-text supply answers and the per-request ones are never
	// compressed and do not vary.
	for _, p := range []string{PathTotalSupply, PathCirculatingSupply, PathMaxSupply, PathHealth, PathStatus} {
		resp, _ := do(http.MethodGet, p, []string{"br, gzip"}, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "" {
			t.Errorf("%s: %d, Content-Encoding %q, Vary %q: want identity without Vary", p, resp.StatusCode,
				resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
		}
	}
	// An error of a path with variants is identity, and says Vary.
	empty := newHarness(t, nil)
	if resp, body := do2(t, c, servePublic(t, empty)+PathPrice, "br, gzip"); resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "Accept-Encoding" || !bytes.HasPrefix(body, []byte(`{"error"`)) {
		t.Errorf("503 of %s: Content-Encoding %q, Vary %q, body %.40s", PathPrice, resp.Header.Get("Content-Encoding"),
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
	for i, rt := range renderedRoutes {
		r := v.routes[i]
		size := func(c coding) string {
			if x := r.variants[c]; x != nil {
				return strconv.Itoa(len(x.body))
			}
			return "—"
		}
		fmt.Fprintf(&tbl, "| %s | %d | %s | %s |\n", rt.path, len(r.body), size(codingGzip), size(codingBrotli))
		if len(r.body) >= 1536 {
			for _, c := range []coding{codingGzip, codingBrotli} {
				if x := r.variants[c]; x == nil || 2*len(x.body) > len(r.body) {
					t.Errorf("%s: %s does not halve a %d-byte body", rt.path, codingName(c), len(r.body))
				}
			}
		}
		if gz, br := r.variants[codingGzip], r.variants[codingBrotli]; gz != nil && br != nil && len(br.body) > len(gz.body) {
			t.Errorf("%s: br %d bytes, gzip %d", rt.path, len(br.body), len(gz.body))
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
func decompress(t *testing.T, c coding, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch c {
	case codingIdentity:
		return body
	case codingGzip:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case codingBrotli:
		r = brotli.NewReader(bytes.NewReader(body))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", codingName(c), err)
	}
	return out
}
