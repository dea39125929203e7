package amount

import (
	"testing"

	"github.com/shopspring/decimal"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestQuotient(t *testing.T) {
	cases := []struct {
		a, b   string
		digits int32
		want   string
	}{
		{"1", "3", 30, "0.333333333333333333333333333333"},
		{"2", "3", 30, "0.666666666666666666666666666667"},
		{"10", "4", 30, "2.5"},
		{"0.0421000078", "3411.67", 30, "0.00001234"},
		{"0.0421", "3411.67", 30, "0.0000123399977137296397365513077173"},
		{"123456789", "0.000001", 30, "123456789000000"},
		{"1", "7e-40", 30, "1428571428571428571428571428570000000000"},
		// the precision of the inputs: 3 significant digits of 0.0421
		{"0.0421", "3411.67", 3, "0.0000123"},
		{"1", "8.71765", 6, "0.11471"}, // trailing zeros trimmed,
		{"0.6595", "114.76", 4, "0.005747"},
		{"1.0001", "81.30", 4, "0.0123"}, // 0.01230: the zero is a digit
	}
	for _, tc := range cases {
		got := Quotient(dec(tc.a), dec(tc.b), tc.digits)
		if got.String() != tc.want {
			t.Errorf("%s / %s = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRoundUSDRatio(t *testing.T) {
	cases := []struct {
		num, den string
		sig      int32
		want     string
	}{
		// 1.0001 × 987654321.123456789 / 81.30 = 12149484.46...: four
		// digits of the price give 12150000, not the 12100000 of the
		// rounded price's product (0.0123 × ... = 12148148.1...).
		{"987753086.5555691346789", "81.30", 4, "12150000"},
		{"987753086.5555691346789", "81.30", 0, "12149484.46"},
		{"1", "3", 30, "0.33"},      // cents bound it
		{"2", "3", 1, "0.7"},        // one digit
		{"25", "10", 1, "2"},        // 2.5, half to even
		{"35", "10", 1, "4"},        // 3.5, half to even
		{"125", "1", 2, "120"},      // 125 to two digits, half to even
		{"1", "1000000", 4, "0"},    // below the cent
		{"-5", "3", 3, "-1.67"},     // sign kept
		{"10", "1", 3, "10"},        // exact
		{"99999", "1", 2, "100000"}, // a carry into a new digit
		{"1", "0.0000000000001", 5, "10000000000000"},
		{"0", "7", 4, "0"},
	}
	for _, tc := range cases {
		got := RoundUSDRatio(dec(tc.num), dec(tc.den), tc.sig)
		if !got.Equal(dec(tc.want)) {
			t.Errorf("RoundUSDRatio(%s / %s, %d) = %s, want %s", tc.num, tc.den, tc.sig, got, tc.want)
		}
	}
	// One rounding from the exact value agrees with RoundUSD wherever the
	// ratio is a terminating decimal.
	for _, s := range []string{"5676049.383496501632", "0.005", "0.015", "123456.785", "1e-9"} {
		for sig := int32(0); sig <= 8; sig++ {
			if a, b := RoundUSDRatio(dec(s), dec("1"), sig), RoundUSD(dec(s), sig); !a.Equal(b) {
				t.Errorf("%s at %d digits: ratio %s, RoundUSD %s", s, sig, a, b)
			}
		}
	}
}

func TestWithDigits(t *testing.T) {
	cases := []struct {
		d    string
		n    int32
		want string
	}{
		{"0.0123", 4, "0.01230"},
		{"1.5", 3, "1.50"},
		{"1.5", 2, "1.5"},
		{"2210", 4, "2210"},
		{"22", 4, "22.00"},
		{"12", 1, "12"},
		{"0", 5, "0"},
		{"0.000000000000001", 3, "0.00000000000000100"},
	}
	for _, tc := range cases {
		if got := WithDigits(dec(tc.d), tc.n); got != tc.want {
			t.Errorf("WithDigits(%s, %d) = %s, want %s", tc.d, tc.n, got, tc.want)
		}
	}
}
