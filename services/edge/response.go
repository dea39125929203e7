package edge

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// group is a freshness group of README, Endpoints: it decides
// Cache-Control.
type group int

const (
	groupNone group = iota // health, status, errors: no-store
	groupMarket
	groupSupply
	groupHolders
	groupStatic
)

const (
	contentJSON = "application/json; charset=utf-8"
	contentText = "text/plain; charset=utf-8"
	noStore     = "no-store"
)

// header is one precomputed response header: a canonical key and a value
// slice shared by every response that carries it (never appended to).
type header struct {
	key string
	val []string
}

// response is one pre-rendered answer: status, body, and every header
// that depends on the data. The request path copies the headers and
// writes the body; it never encodes, and never compresses: a body worth
// it has its gzip and brotli variants rendered with it.
type response struct {
	status int
	// body, hdr and etag are the identity representation.
	body []byte
	hdr  []header
	// etag is the quoted strong ETag (200 only).
	etag string
	// on is the set of codings the answer has; variants holds those other
	// than identity (nil where the variant was not smaller).
	on       offer
	variants [numCodings]*variant
	// lastModified is the Last-Modified value (zero: none), for
	// If-Modified-Since.
	lastModified time.Time
	// noStore is true when Cache-Control is no-store: only such an answer
	// echoes the client's X-Request-Id (a cache would serve a cacheable
	// one, with that id, to everyone).
	noStore bool
}

// variant is one compressed representation of a response's body: its
// bytes, its strong ETag (the identity ETag with a suffix inside the
// quotes) and its headers (the identity headers with its own
// Content-Length and ETag, and Content-Encoding).
type variant struct {
	body []byte
	etag string
	hdr  []header
}

// hdrVary is the Vary of every answer of a path that has compressed
// variants, whatever the answer (identity, 304, error).
var hdrVary = one("Accept-Encoding")

// withVary returns a copy of r that says Vary: Accept-Encoding (r may be
// shared: the internal error answer).
func (r *response) withVary() *response {
	c := *r
	c.hdr = append(slices.Clip(r.hdr), header{"Vary", hdrVary})
	return &c
}

// compress adds r's gzip and brotli variants when its body is worth
// compressing: a 200 of at least minCompressBytes, each variant kept only
// when it is smaller. prev is the answer r replaces: when it has the same
// body, its compressed bytes are taken as they are (a body is compressed
// once per change, not once per render).
func (r *response) compress(prev *response) {
	r.on = 1 << codingIdentity
	if r.status != http.StatusOK || len(r.body) < minCompressBytes {
		return
	}
	same := prev != nil && prev.status == http.StatusOK && prev.etag == r.etag
	for _, c := range [...]coding{codingGzip, codingBrotli} {
		var body []byte
		if same {
			if v := prev.variants[c]; v != nil {
				body = v.body
			}
		} else {
			body = compressBody(c, r.body)
		}
		if body != nil {
			r.addVariant(c, body)
		}
	}
}

// addVariant adds body as r's representation in coding c.
func (r *response) addVariant(c coding, body []byte) {
	v := &variant{body: body, etag: r.etag[:len(r.etag)-1] + etagSuffix[c] + `"`}
	v.hdr = make([]header, 0, len(r.hdr)+1)
	for _, h := range r.hdr {
		switch h.key {
		case "Content-Length":
			h.val = one(strconv.Itoa(len(body)))
		case "Etag":
			h.val = one(v.etag)
		}
		v.hdr = append(v.hdr, h)
	}
	v.hdr = append(v.hdr, header{"Content-Encoding", one(codingNames[c])})
	r.variants[c] = v
	r.on |= 1 << c
}

// dataInfo is the freshness of the data a body is made of.
type dataInfo struct {
	// present is false for bodies made of configuration only.
	present bool
	// updatedAt is the oldest updated_at of the domains in the body: the
	// body is only as fresh as its oldest part. It is the body's
	// updated_at and X-Data-Updated-At.
	updatedAt time.Time
	// newest is the newest updated_at: the last time the representation
	// changed, hence Last-Modified.
	newest time.Time
	// stale is true when any domain in the body is past its stale-after.
	stale bool
}

// etagOf is a strong ETag: a quoted hash of the body bytes.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// encodeJSON encodes v without HTML escaping and without the encoder's
// trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func one(v string) []string { return []string{v} }

// newOK builds a 200 response.
func newOK(contentType, cacheControl string, body []byte, info dataInfo) *response {
	r := &response{status: http.StatusOK, body: body, etag: etagOf(body), noStore: cacheControl == noStore}
	r.hdr = append(r.hdr,
		header{"Content-Type", one(contentType)},
		header{"Content-Length", one(strconv.Itoa(len(body)))},
		header{"Cache-Control", one(cacheControl)},
		header{"Etag", one(r.etag)},
	)
	if info.present {
		r.lastModified = info.newest.UTC().Truncate(time.Second)
		r.hdr = append(r.hdr,
			header{"Last-Modified", one(r.lastModified.Format(http.TimeFormat))},
			header{"X-Data-Updated-At", one(formatTime(info.updatedAt))},
			header{"X-Data-Stale", one(strconv.FormatBool(info.stale))},
		)
	}
	return r
}

// keepLastModifiedMonotonic makes Last-Modified move forward whenever the
// body changes. It follows the data's updated_at, but a body can change
// without newer data (the stale flag flips, a domain of a composite body
// expires): then the date of this render is the change, so that a client
// revalidating with If-Modified-Since never gets a 304 for a body it has
// not seen.
func (r *response) keepLastModifiedMonotonic(prev *response, now time.Time) {
	if r.status != http.StatusOK || prev == nil || prev.status != http.StatusOK ||
		r.lastModified.IsZero() || prev.lastModified.IsZero() {
		return
	}
	switch {
	case r.etag == prev.etag:
		// The same body: keep the date clients already hold.
		r.setLastModified(prev.lastModified)
	case !r.lastModified.After(prev.lastModified):
		// A new body without newer data: it changed now.
		t := now.UTC().Truncate(time.Second)
		if !t.After(prev.lastModified) {
			t = prev.lastModified.Add(time.Second)
		}
		r.setLastModified(t)
	}
}

func (r *response) setLastModified(t time.Time) {
	r.lastModified = t
	val := one(t.Format(http.TimeFormat))
	set := func(hdr []header) {
		for i := range hdr {
			if hdr[i].key == "Last-Modified" {
				hdr[i].val = val
			}
		}
	}
	set(r.hdr)
	for _, v := range r.variants {
		if v != nil {
			set(v.hdr)
		}
	}
}

// Error codes of README, Endpoints.
const (
	codeNotFound           = "not_found"
	codeMethodNotAllowed   = "method_not_allowed"
	codeDataUnavailable    = "data_unavailable"
	codeHoldersUnavailable = "holders_unavailable"
	codeNoMarket           = "no_market"
	codeNotDisclosed       = "not_disclosed"
	codeInternal           = "internal"
	codeContentTooLarge    = "content_too_large"
	codeTooManyConnections = "too_many_connections"
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// newError builds an error response: JSON body, no-store, Retry-After on
// 503.
func newError(status int, code, message string, retryAfter time.Duration) *response {
	body, err := encodeJSON(errorBody{Error: errorDetail{Code: code, Message: message, Status: status}})
	if err != nil { // cannot happen: strings and an int
		body = []byte(`{"error":{"code":"internal","message":"internal error","status":500}}`)
	}
	r := &response{status: status, body: body, noStore: true}
	r.hdr = append(r.hdr,
		header{"Content-Type", one(contentJSON)},
		header{"Content-Length", one(strconv.Itoa(len(body)))},
		header{"Cache-Control", one(noStore)},
	)
	if status == http.StatusServiceUnavailable {
		r.hdr = append(r.hdr, header{"Retry-After", one(strconv.Itoa(int(retryAfter / time.Second)))})
	}
	if status == http.StatusMethodNotAllowed {
		r.hdr = append(r.hdr, header{"Allow", one(allowedMethods)})
	}
	return r
}

// allowedMethods is the Allow header of every route.
const allowedMethods = "GET, HEAD, OPTIONS"

// timeLayout is the one time format of bodies and X-Data-Updated-At: RFC
// 3339 in UTC with exactly three fraction digits (2025-06-01T11:59:30.000Z).
// One width everywhere: the same instant is the same string in every
// body and header, and strings sort as times.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime writes t in timeLayout, truncated to the millisecond (the
// precision of every stored time).
func formatTime(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(timeLayout) }

// write sends r in the coding the request's Accept-Encoding picks among
// those r has: headers, then the body unless the request is HEAD or the
// client's validators match that representation (304).
func (r *response) write(w http.ResponseWriter, req *http.Request) int {
	body, hdr, etag := r.body, r.hdr, r.etag
	if r.on > 1<<codingIdentity {
		if v := r.variants[negotiate(req.Header["Accept-Encoding"], r.on)]; v != nil {
			body, hdr, etag = v.body, v.hdr, v.etag
		}
	}
	h := w.Header()
	for _, kv := range hdr {
		h[kv.key] = kv.val
	}
	if r.noStore {
		echoRequestID(h, req)
	}
	if r.status == http.StatusOK && notModified(req, etag, r.lastModified) {
		delete(h, "Content-Type")
		delete(h, "Content-Length")
		delete(h, "Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return 0
	}
	w.WriteHeader(r.status)
	if req.Method == http.MethodHead {
		return 0
	}
	n, _ := w.Write(body)
	return n
}

// notModified evaluates If-None-Match against the ETag of the
// representation chosen (weak comparison, lists and "*", as RFC 9110
// §13.1.2 asks) and, only without it, If-Modified-Since.
func notModified(req *http.Request, etag string, lastModified time.Time) bool {
	if inm, ok := req.Header["If-None-Match"]; ok {
		for _, v := range inm {
			if etagListMatches(v, etag) {
				return true
			}
		}
		return false
	}
	if ims := req.Header.Get("If-Modified-Since"); ims != "" && !lastModified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !lastModified.After(t)
	}
	return false
}

// etagListMatches reports whether the If-None-Match field value list
// matches etag, comparing opaque tags weakly (W/ ignored).
func etagListMatches(list, etag string) bool {
	for len(list) > 0 {
		// skip separators
		for len(list) > 0 && (list[0] == ' ' || list[0] == '\t' || list[0] == ',') {
			list = list[1:]
		}
		if list == "" {
			return false
		}
		if list[0] == '*' {
			return true
		}
		if len(list) >= 2 && list[0] == 'W' && list[1] == '/' {
			list = list[2:]
		}
		if list == "" || list[0] != '"' {
			return false // malformed: not a match
		}
		end := 1
		for end < len(list) && list[end] != '"' {
			end++
		}
		if end == len(list) {
			return false // unterminated
		}
		if list[:end+1] == etag {
			return true
		}
		list = list[end+1:]
	}
	return false
}
