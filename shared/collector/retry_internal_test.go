package collector

import (
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// TestRetryIn: 5 s after the first failure, twice as long after each
// next, never sooner than a Retry-After, never past the refresh, and not
// for a failure not worth retrying or the store's.
func TestRetryIn(t *testing.T) {
	down := Errorf(contract.ErrKindUnavailable, true, "down")
	limited := &Error{Kind: contract.ErrKindRateLimited, Retry: true, RetryAfter: 30 * time.Second}
	for _, tc := range []struct {
		refresh time.Duration
		failed  int
		err     error
		want    time.Duration
		ok      bool
	}{
		{5 * time.Minute, 1, down, 5 * time.Second, true},
		{5 * time.Minute, 2, down, 10 * time.Second, true},
		{5 * time.Minute, 6, down, 160 * time.Second, true},
		{5 * time.Minute, 7, down, 320 * time.Second, false},
		{5 * time.Minute, 1000, down, 0, false},
		{5 * time.Minute, 1, limited, 30 * time.Second, true},
		{5 * time.Second, 1, down, 5 * time.Second, false},
		{time.Second, 1, down, 0, false},
		{5 * time.Minute, 1, Errorf(contract.ErrKindConfig, false, "no"), 0, false},
		{5 * time.Minute, 1, &Error{Kind: contract.ErrKindStore, Retry: true}, 0, false},
	} {
		d, ok := retryIn(tc.refresh, tc.failed, tc.err)
		if ok != tc.ok || ok && d != tc.want || tc.want != 0 && d != tc.want {
			t.Errorf("retryIn(%s, %d, %v) = %s, %v; want %s, %v", tc.refresh, tc.failed, tc.err, d, ok, tc.want, tc.ok)
		}
	}
}
