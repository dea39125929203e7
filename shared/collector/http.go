package collector

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// ClassifyHTTP maps an upstream HTTP status to an *Error (nil for 2xx).
// 429 and 5xx are retryable outages; 401/403 are refusals an operator
// must fix; other 4xx are invalid requests or answers.
func ClassifyHTTP(upstream string, resp *http.Response) *Error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests:
		e := Errorf(contract.ErrKindRateLimited, true, "%s rate-limited the request (HTTP 429)", upstream)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 && s <= 300 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e := Errorf(contract.ErrKindForbidden, false, "%s refused the request (HTTP %d)", upstream, code)
		e.Remedy = "check the API key or plan of the configured " + upstream + " endpoint"
		return e
	case code >= 500:
		return Errorf(contract.ErrKindUnavailable, true, "%s answered HTTP %d", upstream, code)
	default:
		return Errorf(contract.ErrKindInvalid, false, "%s answered HTTP %d", upstream, code)
	}
}

// Holds keeps, for each upstream, the time before which it asked not to
// be called again (the Retry-After of its last 429), so that no retry,
// later poll or fallback of the collector calls it sooner. A collector
// checks it before every request and notes every classified failure. The
// zero value is ready to use.
type Holds struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// Observe notes the wait that err (an *Error with a RetryAfter) asks of
// upstream; any other error changes nothing.
func (h *Holds) Observe(upstream string, err error) {
	var ce *Error
	if !errors.As(err, &ce) || ce.RetryAfter <= 0 {
		return
	}
	until := time.Now().Add(ce.RetryAfter)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil {
		h.until = map[string]time.Time{}
	}
	if until.After(h.until[upstream]) {
		h.until[upstream] = until
	}
}

// Check returns nil when upstream may be called now; while the wait it
// asked for runs, a retryable rate_limited *Error whose RetryAfter is the
// time left (the request is not made).
func (h *Holds) Check(upstream string) *Error {
	h.mu.Lock()
	until := h.until[upstream]
	h.mu.Unlock()
	left := time.Until(until)
	if left <= 0 {
		return nil
	}
	e := Errorf(contract.ErrKindRateLimited, true, "%s asked to wait (Retry-After): not called again for %s",
		upstream, left.Round(100*time.Millisecond))
	e.RetryAfter = left
	return e
}
