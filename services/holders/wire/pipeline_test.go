package wire_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
)

// manyAccounts is a response of n accounts over n/3 owners (every third
// account empty): several batches of the decoder's hand-over (4,096
// accounts each, three going round) and a partial last one.
func manyAccounts(n int) string {
	parts := make([]string, n)
	for i := range parts {
		amount := uint64(i % 3)
		parts[i] = account(byte(i%251), amount)
	}
	return response("[" + strings.Join(parts, ",") + "]")
}

// TestDecodeAcrossBatches: the count over many batches equals the
// encoding/json oracle's.
func TestDecodeAcrossBatches(t *testing.T) {
	body := manyAccounts(3*4096 + 4096/2 + 7)
	wantAccounts, wantNonZero, wantHolders, ok := reference([]byte(body))
	if !ok {
		t.Fatal("the oracle rejects the response")
	}
	c := tally.NewCount()
	if _, err := wire.DecodeProgramAccounts(strings.NewReader(body), c, nil); err != nil {
		t.Fatal(err)
	}
	if c.TokenAccounts != wantAccounts || c.NonZeroAccounts != wantNonZero || c.Holders() != wantHolders {
		t.Errorf("accounts %d non-zero %d holders %d, want %d %d %d",
			c.TokenAccounts, c.NonZeroAccounts, c.Holders(), wantAccounts, wantNonZero, wantHolders)
	}
}

// TestLimitWinsOverLaterError: the owner set runs behind the decoder, yet
// a ceiling met at an account is the error, not a syntax error the decoder
// meets further on (as it would be were each account added as it is
// decoded); and the decoder stops within a few batches of it.
func TestLimitWinsOverLaterError(t *testing.T) {
	good := manyAccounts(5 * 4096)
	for _, tt := range []struct {
		name string
		body string
	}{
		{"syntax error further on", good[:len(good)-20] + "x" + good[len(good)-19:]},
		{"truncated further on", good[:len(good)-100]},
		{"valid to the end", good},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := tally.NewCount()
			c.Limit(10, 0)
			_, err := wire.DecodeProgramAccounts(strings.NewReader(tt.body), c, nil)
			var le *tally.LimitError
			if !errors.As(err, &le) || le.MaxAccounts != 10 || le.Accounts != 10 {
				t.Fatalf("error %v, want the ceiling of 10 accounts met at the 10th", err)
			}
			if c.TokenAccounts != 10 {
				t.Errorf("%d accounts counted, want 10", c.TokenAccounts)
			}
		})
	}
	// The decoder stops early: a stream that is only ever more accounts
	// is read no further than the batches in flight (3 of the 5, and the
	// scanner's 64 KiB ahead), however late the counter runs: it once
	// filled a fourth, the batch the counter handed back after failing
	// on it, and read past 4/5 when the machine was busy. One processor
	// makes that the rule: the decoder fills every free batch before the
	// counter runs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r := &countingReader{r: strings.NewReader(good)}
	c := tally.NewCount()
	c.Limit(10, 0)
	if _, err := wire.DecodeProgramAccounts(r, c, nil); err == nil {
		t.Fatal("no error past the ceiling")
	}
	if r.n > int64(len(good))*4/5 {
		t.Errorf("read %d of %d bytes past a ceiling met at the 10th account", r.n, len(good))
	}
}

type countingReader struct {
	r *strings.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
