package amount

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		raw      string
		decimals uint8
		want     string
	}{
		{"0", 0, "0"},
		{"0", 6, "0"},
		{"0", 9, "0"},
		{"000", 9, "0"},
		{"1", 0, "1"},
		{"1", 6, "0.000001"},
		{"1", 9, "0.000000001"},
		{"1000000", 6, "1"},
		{"1500000", 6, "1.5"},
		{"1000000000000000", 6, "1000000000"},
		{"999999999123456789", 9, "999999999.123456789"},
		{"999999999123456000", 9, "999999999.123456"},
		{"1000000000000000000", 9, "1000000000"},
		{"18446744073709551615", 0, "18446744073709551615"},
		{"18446744073709551615", 6, "18446744073709.551615"},
		{"18446744073709551615", 9, "18446744073.709551615"},
		{"18446744073709551615", 20, "0.18446744073709551615"},
		{"0000123", 2, "1.23"},
		{"100", 2, "1"},
		{"10", 2, "0.1"},
	}
	for _, tt := range tests {
		got, err := Format(tt.raw, tt.decimals)
		if err != nil {
			t.Fatalf("Format(%q, %d): %v", tt.raw, tt.decimals, err)
		}
		if got != tt.want {
			t.Errorf("Format(%q, %d) = %q, want %q", tt.raw, tt.decimals, got, tt.want)
		}
	}
}

func TestFormatRejects(t *testing.T) {
	for _, raw := range []string{"", "-1", "+1", "1.5", "1e9", " 1", "0x10", "１", strings.Repeat("9", 81)} {
		if _, err := Format(raw, 6); !errors.Is(err, ErrInvalid) {
			t.Errorf("Format(%q) error = %v, want ErrInvalid", raw, err)
		}
	}
}

func TestToRaw(t *testing.T) {
	tests := []struct {
		value    string
		decimals uint8
		want     string
		bad      bool
	}{
		{"1000000000", 9, "1000000000000000000", false},
		{"1000000000", 0, "1000000000", false},
		{"12.5", 6, "12500000", false},
		{"0.000001", 6, "1", false},
		{"0", 6, "0", false},
		{"0.0000001", 6, "", true},
		{"1.", 6, "", true},
		{".5", 6, "", true},
		{"-1", 6, "", true},
		{"1e9", 6, "", true},
	}
	for _, tt := range tests {
		got, err := ToRaw(tt.value, tt.decimals)
		if tt.bad {
			if err == nil {
				t.Errorf("ToRaw(%q, %d) = %q, want error", tt.value, tt.decimals, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ToRaw(%q, %d) = %q, %v; want %q", tt.value, tt.decimals, got, err, tt.want)
		}
	}
}

func TestParseU64(t *testing.T) {
	if got, err := ParseU64("18446744073709551615"); err != nil || got != "18446744073709551615" {
		t.Errorf("u64 max: %q %v", got, err)
	}
	if _, err := ParseU64("18446744073709551616"); err == nil {
		t.Error("u64 max + 1 accepted")
	}
}

func TestCompare(t *testing.T) {
	if Compare("10", "9") != 1 || Compare("9", "10") != -1 || Compare("7", "7") != 0 {
		t.Error("Compare is not numeric")
	}
}

// FuzzFormat checks Format against an independent computation with big.Rat
// and that ToRaw inverts it.
func FuzzFormat(f *testing.F) {
	f.Add("999999999123456789", uint8(9))
	f.Add("18446744073709551615", uint8(0))
	f.Add("0", uint8(6))
	f.Add("100", uint8(2))
	f.Add("-5", uint8(3))
	f.Fuzz(func(t *testing.T, raw string, decimals uint8) {
		decimals %= 40
		got, err := Format(raw, decimals)
		var n big.Int
		_, ok := n.SetString(raw, 10)
		valid := ok && n.Sign() >= 0 && raw != "" && !strings.ContainsAny(raw, "+-_") && len(raw) <= maxDigits
		if !valid {
			if err == nil {
				t.Fatalf("Format(%q) accepted invalid input: %q", raw, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("Format(%q, %d): %v", raw, decimals, err)
		}
		if strings.ContainsAny(got, "eE,+-") || strings.HasSuffix(got, ".") ||
			(strings.Contains(got, ".") && strings.HasSuffix(got, "0")) {
			t.Fatalf("Format(%q, %d) = %q is not in canonical form", raw, decimals, got)
		}
		want := new(big.Rat).SetFrac(&n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil))
		back, ok := new(big.Rat).SetString(got)
		if !ok || back.Cmp(want) != 0 {
			t.Fatalf("Format(%q, %d) = %q, want the value %s", raw, decimals, got, want.FloatString(int(decimals)))
		}
		r, err := ToRaw(got, decimals)
		if err != nil || r != n.String() {
			t.Fatalf("ToRaw(%q, %d) = %q, %v; want %s", got, decimals, r, err, n.String())
		}
	})
}
