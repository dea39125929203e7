package collector

import (
	"net/http"
	"strconv"
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
