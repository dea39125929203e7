package conneg

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/conneg/connegtest"
)

func TestNegotiate(t *testing.T) {
	for _, c := range connegtest.Cases {
		if got := Negotiate(c.Fields, connegtest.AllCodings); got != c.Want {
			t.Errorf("Accept-Encoding %q: %s, want %s", c.Fields, connegtest.Name(got), connegtest.Name(c.Want))
		}
		// With gzip alone on offer, br is never sent.
		want := c.Want
		if want == answer.CodingBrotli {
			want = negotiateRef(c.Fields, 1<<answer.CodingIdentity|1<<answer.CodingGzip)
		}
		if got := Negotiate(c.Fields, 1<<answer.CodingIdentity|1<<answer.CodingGzip); got != want {
			t.Errorf("Accept-Encoding %q, gzip on offer: %s, want %s", c.Fields, connegtest.Name(got), connegtest.Name(want))
		}
		if got := Negotiate(c.Fields, 1<<answer.CodingIdentity); got != answer.CodingIdentity {
			t.Errorf("Accept-Encoding %q, identity only: %s", c.Fields, connegtest.Name(got))
		}
	}
}

// TestNegotiateAllocatesNothing: it runs on every request of a
// compressible path.
func TestNegotiateAllocatesNothing(t *testing.T) {
	fields := []string{"gzip;q=0.8, deflate, BR;q=0.9, identity;q=0.1, *;q=0"}
	if n := testing.AllocsPerRun(100, func() { Negotiate(fields, connegtest.AllCodings) }); n != 0 {
		t.Fatalf("negotiate: %v allocations", n)
	}
}

// FuzzAcceptEncoding checks Negotiate against negotiateRef, a second
// implementation written differently (regular expressions over split
// elements), on arbitrary field lines: the same choice, never a coding
// that is not on offer, and never one the field does not accept.
func FuzzAcceptEncoding(f *testing.F) {
	for _, c := range connegtest.Cases {
		f.Add(strings.Join(c.Fields, "\n"), uint8(connegtest.AllCodings))
	}
	f.Add("br;q=0.001, gzip;q=0.0009", uint8(connegtest.AllCodings))
	f.Add("*;q=0.3, br;q=0.2, identity;q=0.3", uint8(connegtest.AllCodings))
	f.Fuzz(func(t *testing.T, field string, on uint8) {
		o := answer.Offer(on)&connegtest.AllCodings | 1<<answer.CodingIdentity
		var fields []string
		if field != "" {
			fields = strings.Split(field, "\n")
		}
		got := Negotiate(fields, o)
		if !o.Has(got) {
			t.Fatalf("%q: %s is not on offer (%03b)", fields, connegtest.Name(got), o)
		}
		if want := negotiateRef(fields, o); got != want {
			t.Fatalf("%q on offer %03b: %s, the reference says %s", fields, o, connegtest.Name(got), connegtest.Name(want))
		}
	})
}

var (
	refElement = regexp.MustCompile(`^([!#$%&'*+.^_` + "`" + `|~0-9A-Za-z-]+)(?:[ \t]*;[ \t]*[qQ]=(0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?))?$`)
)

// negotiateRef is the reference negotiation of the fuzz test: RFC 9110
// §12.5.3 as the edge reads it, done the slow way.
func negotiateRef(fields []string, o answer.Offer) answer.Coding {
	if len(fields) == 0 {
		return answer.CodingIdentity
	}
	q := map[string]float64{}
	for _, f := range fields {
		for _, el := range strings.Split(f, ",") {
			el = strings.Trim(el, " \t")
			if el == "" {
				continue
			}
			m := refElement.FindStringSubmatch(el)
			if m == nil {
				return answer.CodingIdentity
			}
			name := strings.ToLower(m[1])
			if name == "x-gzip" {
				name = "gzip"
			}
			w := 1.0
			if m[2] != "" {
				w, _ = strconv.ParseFloat(m[2], 64)
			}
			if old, ok := q[name]; !ok || w < old {
				q[name] = w
			}
		}
	}
	weight := func(name string) float64 {
		if w, ok := q[name]; ok {
			return w
		}
		if w, ok := q["*"]; ok {
			return w
		}
		return -1
	}
	best, bestQ := answer.CodingIdentity, 0.0
	for _, c := range []struct {
		c    answer.Coding
		name string
	}{{answer.CodingBrotli, "br"}, {answer.CodingGzip, "gzip"}} {
		if w := weight(c.name); o.Has(c.c) && w > bestQ+1e-9 {
			best, bestQ = c.c, w
		}
	}
	if best != answer.CodingIdentity && weight("identity") > bestQ+1e-9 {
		return answer.CodingIdentity
	}
	return best
}
