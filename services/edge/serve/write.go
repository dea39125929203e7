package serve

import (
	"net/http"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/conneg"
)

// writeResponse sends r in the coding the request's Accept-Encoding picks among
// those r has: headers, then the body unless the request is HEAD or the
// client's validators match that representation (304).
func writeResponse(r *answer.Answer, w http.ResponseWriter, req *http.Request) int {
	body, hdr, etag := r.Body, r.Headers, r.ETag
	if r.Codings > 1<<answer.CodingIdentity {
		if v := r.Variants[conneg.Negotiate(req.Header["Accept-Encoding"], r.Codings)]; v != nil {
			body, hdr, etag = v.Body, v.Headers, v.ETag
		}
	}
	h := w.Header()
	for _, kv := range hdr {
		h[kv.Key] = kv.Values
	}
	if r.NoStore {
		echoRequestID(h, req)
	}
	if r.Status == http.StatusOK && notModified(req, etag, r.LastModified) {
		delete(h, "Content-Type")
		delete(h, "Content-Length")
		delete(h, "Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return 0
	}
	w.WriteHeader(r.Status)
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
			if conneg.ETagListMatches(v, etag) {
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
