package answer

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// group is a freshness group of README, Endpoints: it decides
// Cache-Control.
type Group int

const (
	GroupNone Group = iota // health, status, errors: no-store
	GroupMarket
	GroupSupply
	GroupHolders
	GroupStatic
)

const (
	ContentJSON = "application/json; charset=utf-8"
	ContentText = "text/plain; charset=utf-8"
	NoStore     = "no-store"
)

// header is one precomputed response header: a canonical key and a value
// slice shared by every response that carries it (never appended to).
type Header struct {
	Key    string
	Values []string
}

// response is one pre-rendered answer: status, body, and every header
// that depends on the data. The request path copies the headers and
// writes the body; it never encodes, and never compresses: a body worth
// it has its gzip and brotli variants rendered with it.
type Answer struct {
	Status int
	// body, hdr and etag are the identity representation.
	Body    []byte
	Headers []Header
	// etag is the quoted strong ETag (200 only).
	ETag string
	// on is the set of codings the answer has; variants holds those other
	// than identity (nil where the variant was not smaller).
	Codings  Offer
	Variants [NumCodings]*Variant
	// lastModified is the Last-Modified value (zero: none), for
	// If-Modified-Since.
	LastModified time.Time
	// noStore is true when Cache-Control is no-store: only such an answer
	// echoes the client's X-Request-Id (a cache would serve a cacheable
	// one, with that id, to everyone).
	NoStore bool
}

// Variant is one compressed representation of a response's body: its
// bytes, its strong ETag (the identity ETag with a suffix inside the
// quotes) and its headers (the identity headers with its own
// Content-Length and ETag, and Content-Encoding).
type Variant struct {
	Body    []byte
	ETag    string
	Headers []Header
}

// hdrVary is the Vary of every answer of a path that has compressed
// variants, whatever the answer (identity, 304, error).
var hdrVary = One("Accept-Encoding")

// withVary returns a copy of r that says Vary: Accept-Encoding (r may be
// shared: the internal error answer).
func (r *Answer) WithVary() *Answer {
	c := *r
	c.Headers = append(slices.Clip(r.Headers), Header{"Vary", hdrVary})
	return &c
}

// compress adds r's gzip and brotli variants when its body is worth
// compressing: a 200 of at least minCompressBytes, each variant kept only
// when it is smaller. prev is the answer r replaces: when it has the same
// body, its compressed bytes are taken as they are (a body is compressed
// once per change, not once per render).
func (r *Answer) Compress(prev *Answer) {
	r.Codings = 1 << CodingIdentity
	if r.Status != StatusOK || len(r.Body) < MinCompressBytes {
		return
	}
	same := prev != nil && prev.Status == StatusOK && prev.ETag == r.ETag
	for _, c := range [...]Coding{CodingGzip, CodingBrotli} {
		var body []byte
		if same {
			if v := prev.Variants[c]; v != nil {
				body = v.Body
			}
		} else {
			body = compressBody(c, r.Body)
		}
		if body != nil {
			r.addVariant(c, body)
		}
	}
}

// addVariant adds body as r's representation in coding c.
func (r *Answer) addVariant(c Coding, body []byte) {
	v := &Variant{Body: body, ETag: r.ETag[:len(r.ETag)-1] + EtagSuffix[c] + `"`}
	v.Headers = make([]Header, 0, len(r.Headers)+1)
	for _, h := range r.Headers {
		switch h.Key {
		case "Content-Length":
			h.Values = One(strconv.Itoa(len(body)))
		case "Etag":
			h.Values = One(v.ETag)
		}
		v.Headers = append(v.Headers, h)
	}
	v.Headers = append(v.Headers, Header{"Content-Encoding", One(CodingNames[c])})
	r.Variants[c] = v
	r.Codings |= 1 << c
}

// dataInfo is the freshness of the data a body is made of.
type DataInfo struct {
	// present is false for bodies made of configuration only.
	Present bool
	// updatedAt is the oldest updated_at of the domains in the body: the
	// body is only as fresh as its oldest part. It is the body's
	// updated_at and X-Data-Updated-At.
	UpdatedAt time.Time
	// newest is the newest updated_at: the last time the representation
	// changed, hence Last-Modified.
	Newest time.Time
	// stale is true when any domain in the body is past its stale-after.
	Stale bool
}

// etagOf is a strong ETag: a quoted hash of the body bytes.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// encodeJSON encodes v without HTML escaping and without the encoder's
// trailing newline.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func One(v string) []string { return []string{v} }

// newOK builds a 200 response.
func NewOK(contentType, cacheControl string, body []byte, info DataInfo) *Answer {
	r := &Answer{Status: StatusOK, Body: body, ETag: etagOf(body), NoStore: cacheControl == NoStore}
	r.Headers = append(r.Headers,
		Header{"Content-Type", One(contentType)},
		Header{"Content-Length", One(strconv.Itoa(len(body)))},
		Header{"Cache-Control", One(cacheControl)},
		Header{"Etag", One(r.ETag)},
	)
	if info.Present {
		r.LastModified = info.Newest.UTC().Truncate(time.Second)
		r.Headers = append(r.Headers,
			Header{"Last-Modified", One(r.LastModified.Format(TimeFormat))},
			Header{"X-Data-Updated-At", One(FormatTime(info.UpdatedAt))},
			Header{"X-Data-Stale", One(strconv.FormatBool(info.Stale))},
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
func (r *Answer) KeepLastModifiedMonotonic(prev *Answer, now time.Time) {
	if r.Status != StatusOK || prev == nil || prev.Status != StatusOK ||
		r.LastModified.IsZero() || prev.LastModified.IsZero() {
		return
	}
	switch {
	case r.ETag == prev.ETag:
		// The same body: keep the date clients already hold.
		r.setLastModified(prev.LastModified)
	case !r.LastModified.After(prev.LastModified):
		// A new body without newer data: it changed now.
		t := now.UTC().Truncate(time.Second)
		if !t.After(prev.LastModified) {
			t = prev.LastModified.Add(time.Second)
		}
		r.setLastModified(t)
	}
}

func (r *Answer) setLastModified(t time.Time) {
	r.LastModified = t
	val := One(t.Format(TimeFormat))
	set := func(hdr []Header) {
		for i := range hdr {
			if hdr[i].Key == "Last-Modified" {
				hdr[i].Values = val
			}
		}
	}
	set(r.Headers)
	for _, v := range r.Variants {
		if v != nil {
			set(v.Headers)
		}
	}
}

// Error codes of README, Endpoints.
const (
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeDataUnavailable    = "data_unavailable"
	CodeHoldersUnavailable = "holders_unavailable"
	CodeNoMarket           = "no_market"
	CodeNotDisclosed       = "not_disclosed"
	CodeInternal           = "internal"
	CodeContentTooLarge    = "content_too_large"
	CodeTooManyConnections = "too_many_connections"
	// CodeTooManyStreams: EDGE_MAX_EVENT_STREAMS streams are open.
	CodeTooManyStreams = "too_many_streams"
	// CodeShuttingDown: the edge is ending its streams to shut down.
	CodeShuttingDown = "shutting_down"
)

type ErrorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// newError builds an error response: JSON body, no-store, Retry-After on
// 503.
func NewError(status int, code, message string, retryAfter time.Duration) *Answer {
	body, err := EncodeJSON(ErrorBody{Error: errorDetail{Code: code, Message: message, Status: status}})
	if err != nil { // cannot happen: strings and an int
		body = []byte(`{"error":{"code":"internal","message":"internal error","status":500}}`)
	}
	r := &Answer{Status: status, Body: body, NoStore: true}
	r.Headers = append(r.Headers,
		Header{"Content-Type", One(ContentJSON)},
		Header{"Content-Length", One(strconv.Itoa(len(body)))},
		Header{"Cache-Control", One(NoStore)},
	)
	if status == StatusServiceUnavailable {
		r.Headers = append(r.Headers, Header{"Retry-After", One(strconv.Itoa(int(retryAfter / time.Second)))})
	}
	if status == StatusMethodNotAllowed {
		r.Headers = append(r.Headers, Header{"Allow", One(AllowedMethods)})
	}
	return r
}

// allowedMethods is the Allow header of every route.
const AllowedMethods = "GET, HEAD, OPTIONS"

// timeLayout is the one time format of bodies and X-Data-Updated-At: RFC
// 3339 in UTC with exactly three fraction digits (2025-06-01T11:59:30.000Z).
// One width everywhere: the same instant is the same string in every
// body and header, and strings sort as times.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime writes t in timeLayout, truncated to the millisecond (the
// precision of every stored time).
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(timeLayout) }
