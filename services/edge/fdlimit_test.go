package edge

import (
	"strings"
	"testing"
)

func TestConnCap(t *testing.T) {
	cases := []struct {
		name       string
		configured int
		limit      uint64
		known      bool
		want       int
		err        string
	}{
		{"default under a large limit", 0, 1 << 20, true, 10000, ""},
		{"default under 1024", 0, 1024, true, 896, ""},
		{"default under 4096", 0, 4096, true, 3584, ""},
		{"default under 20000", 0, 20000, true, 10000, ""},
		{"limit unknown", 0, 0, false, 10000, ""},
		{"configured, limit unknown", 50000, 0, false, 50000, ""},
		{"configured within", 500, 1024, true, 500, ""},
		{"configured at the bound", 896, 1024, true, 896, ""},
		{"configured above", 10000, 1024, true, 0, "EDGE_MAX_CONNECTIONS: 10000 is above what the file descriptor limit allows: RLIMIT_NOFILE is 1024 and 128 are kept for Redis, upstreams and logs, so at most 896"},
		{"configured just above", 897, 1024, true, 0, "at most 896"},
		{"limit too low", 0, 100, true, 0, "leaves no room for connections once 128 are kept"},
		{"limit at the reserve", 0, 128, true, 0, "to at least 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := connCap(tc.configured, tc.limit, tc.known)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || from == "" {
				t.Fatalf("connCap = %d (%q), %v; want %d", got, from, err, tc.want)
			}
		})
	}
}
