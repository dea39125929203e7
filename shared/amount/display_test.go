package amount

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestSignificant(t *testing.T) {
	for in, want := range map[string]int32{"0.005747": 4, "1.50": 3, "2210": 4, "0": 1, "0.00001234": 4,
		"201777.8": 7, "-0.05": 1, "987654321.123456": 15} {
		if got := Significant(decimal.RequireFromString(in)); got != want {
			t.Errorf("Significant(%s) = %d, want %d", in, got, want)
		}
	}
}

// TestRoundUSD: the documented examples, and one rounding step half to
// even from the exact value.
func TestRoundUSD(t *testing.T) {
	for _, tc := range []struct {
		in   string
		sig  int32
		want string
	}{
		{"12339.99998918344704", 4, "12340"},   // 0.00001234 × 999999999.123456
		{"5676049.383496501632", 4, "5676000"}, // 0.005747 × 987654321.123456
		{"5747000", 4, "5747000"},              // 0.005747 × 1000000000
		{"0.1234", 4, "0.12"},                  // cents at most
		{"12.345", 5, "12.34"},                 // half to even
		{"12.355", 5, "12.36"},                 // half to even
		{"201777.8", 0, "201777.8"},            // a sum, cents only: unchanged
		{"1184787.391", 0, "1184787.39"},       // a sum, cents only
		{"99995", 4, "100000"},                 // carries into a new digit
		{"0", 4, "0"},
	} {
		got := RoundUSD(decimal.RequireFromString(tc.in), tc.sig)
		if got.String() != tc.want {
			t.Errorf("RoundUSD(%s, %d) = %s, want %s", tc.in, tc.sig, got, tc.want)
		}
	}
}

func TestRoundSignificant(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int32
		want string
	}{
		{"0.114710602356844036023717564143", 4, "0.1147"},
		{"0.00003051", 6, "0.00003051"},
		{"8.71765", 5, "8.7176"}, // half to even
		{"123456", 2, "120000"},
	} {
		if got := RoundSignificant(decimal.RequireFromString(tc.in), tc.n); got.String() != tc.want {
			t.Errorf("RoundSignificant(%s, %d) = %s, want %s", tc.in, tc.n, got, tc.want)
		}
	}
}
