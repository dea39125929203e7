package chartcheck

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

// codedReply is an answer read without decoding its content coding.
type codedReply struct {
	status int
	header http.Header
	body   []byte
}

func (r codedReply) encoding() string { return r.header.Get("Content-Encoding") }
func (r codedReply) cache() string    { return r.header.Get("X-Cache-Status") }

// fetchCoded sends method to u with the Accept-Encoding field lines ae (nil:
// none) and, when set, If-None-Match.
func fetchCoded(t *testing.T, c *http.Client, method, u string, ae []string, inm string) codedReply {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ae != nil {
		req.Header["Accept-Encoding"] = ae
	}
	if inm != "" {
		req.Header.Set("If-None-Match", inm)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return codedReply{status: resp.StatusCode, header: resp.Header, body: b}
}

// decodeBody decodes body of Content-Encoding enc ("" for identity).
func decodeBody(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "":
		return body
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	default:
		t.Fatalf("unexpected Content-Encoding %q", enc)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", enc, err)
	}
	return out
}

// testCodings checks the cache tier with the edge's compressed variants,
// on /api/exchanges (static: fresh for the whole test). The first answer
// of each coding (identity, gzip, br) reaches the edge, asked with only
// that coding; every other request, whatever its spelling of
// Accept-Encoding, is a HIT on one of these three entries and gets a coding
// it accepts: br only where br is listed (or covered by "*") with a weight
// above 0. Made-up Accept-Encoding values do not split the cache. HEAD and
// If-None-Match are answered per variant.
func testCodings(t *testing.T, cache, edgeURL string, counter *countingProxy) {
	const path = "/api/exchanges"
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	defer c.CloseIdleConnections()

	direct := fetchCoded(t, c, http.MethodGet, edgeURL+path, nil, "")
	if direct.status != 200 || len(direct.body) < 256 {
		t.Fatalf("GET %s from the edge: %d with %d bytes", path, direct.status, len(direct.body))
	}
	identity, identETag := direct.body, direct.header.Get("Etag")
	etagOf := func(enc string) string {
		switch enc {
		case "gzip":
			return strings.TrimSuffix(identETag, `"`) + `-gz"`
		case "br":
			return strings.TrimSuffix(identETag, `"`) + `-br"`
		}
		return identETag
	}
	check := func(name string, r codedReply, wantEnc, wantCache string) {
		t.Helper()
		if r.status != 200 || r.encoding() != wantEnc || r.cache() != wantCache {
			t.Fatalf("%s: %d, Content-Encoding %q, %s; want 200, %q, %s", name, r.status, r.encoding(), r.cache(), wantEnc, wantCache)
		}
		if !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s: Vary %q, want Accept-Encoding passed to the client", name, r.header.Get("Vary"))
		}
		if r.header.Get("Etag") != etagOf(wantEnc) {
			t.Errorf("%s: ETag %s, want %s", name, r.header.Get("Etag"), etagOf(wantEnc))
		}
		if !bytes.Equal(decodeBody(t, wantEnc, r.body), identity) {
			t.Errorf("%s: the body does not decode to the edge's identity body", name)
		}
	}

	first := map[string]codedReply{}
	for _, tc := range []struct {
		ae  []string
		enc string
	}{{nil, ""}, {[]string{"gzip"}, "gzip"}, {[]string{"br;q=1, gzip;q=0.5"}, "br"}} {
		name := fmt.Sprintf("GET %q", tc.ae)
		r := fetchCoded(t, c, http.MethodGet, cache+path, tc.ae, "")
		check(name+" (first)", r, tc.enc, "MISS")
		again := fetchCoded(t, c, http.MethodGet, cache+path, tc.ae, "")
		check(name+" (again)", again, tc.enc, "HIT")
		if !bytes.Equal(again.body, r.body) {
			t.Errorf("%s: the HIT is not the bytes of the MISS", name)
		}
		first[tc.enc] = r
	}
	if n := counter.count(path); n != 3 {
		t.Fatalf("the edge saw %d requests for %s, want 3 (one per coding)", n, path)
	}
	if got, want := counter.encodingsOf(path), map[string]int{"": 1, "gzip": 1, "br": 1}; !maps.Equal(got, want) {
		t.Fatalf("the edge was asked with Accept-Encoding %v, want %v (the one coding of each entry)", got, want)
	}

	// Every other spelling is a HIT on one of the three entries, in a
	// coding the client accepts.
	spellings := []struct {
		ae  []string
		enc string
	}{
		{[]string{""}, ""},
		{[]string{"identity"}, ""},
		{[]string{"deflate, zstd"}, ""},
		{[]string{"brotli"}, ""},
		{[]string{"br;q=0"}, ""},
		{[]string{"*;q=0"}, ""},
		{[]string{"identity;q=1, br;q=0.5"}, ""},
		{[]string{"GZIP;q=0.9"}, "gzip"},
		{[]string{"x-gzip"}, "gzip"},
		{[]string{"br;q=0, gzip"}, "gzip"},
		{[]string{"br;q=0.000, *"}, "gzip"},
		{[]string{"gzip;q=1, br;q=0.5"}, "gzip"},
		{[]string{"gzip, br;q=0"}, "gzip"},
		{[]string{"gzip, deflate, br, zstd"}, "br"},
		{[]string{"BR"}, "br"},
		{[]string{"*"}, "br"},
		{[]string{"gzip;q=0.5, br;q=0.5"}, "br"},
	}
	for i := range 5 {
		spellings = append(spellings, struct {
			ae  []string
			enc string
		}{[]string{fmt.Sprintf("br, x-made-up-%d-%d", i, time.Now().UnixNano())}, "br"})
	}
	for _, tc := range spellings {
		name := fmt.Sprintf("GET %q", tc.ae)
		r := fetchCoded(t, c, http.MethodGet, cache+path, tc.ae, "")
		check(name, r, tc.enc, "HIT")
		if r.encoding() == "br" && !asksBrotli(tc.ae) {
			t.Errorf("%s: br served to a client that did not ask for it", name)
		}
	}
	// Two field lines: nginx before 1.23 (Debian 12 has 1.22) reads only the
	// first, later ones join them; either way a coding the client accepts.
	if r := fetchCoded(t, c, http.MethodGet, cache+path, []string{"deflate", "gzip"}, ""); r.status != 200 || r.cache() != "HIT" ||
		(r.encoding() != "" && r.encoding() != "gzip") || !bytes.Equal(decodeBody(t, r.encoding(), r.body), identity) {
		t.Errorf(`GET ["deflate" "gzip"]: %d %s, Content-Encoding %q; want a HIT in identity or gzip`, r.status, r.cache(), r.encoding())
	}
	if n := counter.count(path); n != 3 {
		t.Fatalf("the edge saw %d requests for %s after %d other spellings, want still 3", n, path, len(spellings)+1)
	}

	// HEAD: the GET's headers, no body.
	for _, enc := range []string{"", "gzip", "br"} {
		head := fetchCoded(t, c, http.MethodHead, cache+path, []string{enc}, "")
		g := first[enc]
		if head.status != 200 || len(head.body) != 0 || head.encoding() != enc ||
			head.header.Get("Etag") != g.header.Get("Etag") || head.header.Get("Content-Length") != g.header.Get("Content-Length") {
			t.Errorf("HEAD %q: %d, %d bytes, Content-Encoding %q, ETag %s, Content-Length %s; GET had %s, %s",
				enc, head.status, len(head.body), head.encoding(), head.header.Get("Etag"), head.header.Get("Content-Length"),
				g.header.Get("Etag"), g.header.Get("Content-Length"))
		}
	}
	// If-None-Match per variant: the gzip ETag is a 304 for gzip, not for br.
	if r := fetchCoded(t, c, http.MethodGet, cache+path, []string{"gzip"}, etagOf("gzip")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match %s asking gzip: %d, want 304", etagOf("gzip"), r.status)
	}
	if r := fetchCoded(t, c, http.MethodGet, cache+path, []string{"br"}, etagOf("gzip")); r.status != 200 || r.encoding() != "br" {
		t.Errorf("If-None-Match %s asking br: %d %q, want 200 br", etagOf("gzip"), r.status, r.encoding())
	}
	if r := fetchCoded(t, c, http.MethodGet, cache+path, nil, etagOf("br")); r.status != 200 || r.encoding() != "" {
		t.Errorf("If-None-Match %s asking nothing: %d %q, want 200 identity", etagOf("br"), r.status, r.encoding())
	}
	if n := counter.count(path); n != 3 {
		t.Errorf("the edge saw %d requests for %s, want still 3", n, path)
	}
}

// asksBrotli reports whether Accept-Encoding field lines accept br.
func asksBrotli(fields []string) bool { return acceptsCoding(fields, "br") }

// acceptsCoding reports whether Accept-Encoding field lines accept coding
// (x-gzip is gzip): listed with a weight above 0, or not listed and "*"
// with a weight above 0.
func acceptsCoding(fields []string, coding string) bool {
	weight := map[string]bool{}
	listed := map[string]bool{}
	for _, f := range fields {
		for _, el := range strings.Split(f, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(el), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "x-gzip" {
				name = "gzip"
			}
			q := strings.ToLower(strings.ReplaceAll(params, " ", ""))
			zero := strings.HasPrefix(q, "q=0") && strings.Trim(strings.TrimPrefix(q, "q=0"), ".0") == ""
			if !listed[name] || zero {
				weight[name] = !zero
			}
			listed[name] = true
		}
	}
	if listed[coding] {
		return weight[coding]
	}
	return listed["*"] && weight["*"]
}
