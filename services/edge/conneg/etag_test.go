package conneg

import (
	"strings"
	"testing"
)

// FuzzIfNoneMatch: the If-None-Match parser (client bytes) never panics,
// and a list that contains the ETag verbatim always matches.
func FuzzIfNoneMatch(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc"`, `*`, `"x", "abc"`, `"unterminated`, `,,,`, `W/`, ``} {
		f.Add(s)
	}
	const etag = `"abc"`
	f.Fuzz(func(t *testing.T, list string) {
		_ = ETagListMatches(list, etag)
		if !strings.Contains(list, `"`) && !strings.Contains(list, "*") && ETagListMatches(list, etag) {
			t.Fatalf("%q matched without a quoted tag or *", list)
		}
		if !ETagListMatches(etag+", "+list, etag) {
			t.Fatalf("a list starting with the ETag did not match")
		}
	})
}
