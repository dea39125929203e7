// Package amount formats token amounts exactly, from the base-unit integer
// the ledger reports and the mint's decimals, as README, Endpoints asks:
// never through a float, no exponent, no thousands separator, trailing zeros
// and a trailing point trimmed.
package amount

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// MaxDecimals is the largest decimals value accepted. SPL mints store
// decimals in a u8; 255 would be absurd, but it is still exact.
const MaxDecimals = 255

// maxDigits bounds a raw amount's length: the u64 maximum has 20 digits, and
// derived figures (maximum supply in base units at high decimals) stay far
// below 80.
const maxDigits = 80

// ErrInvalid is wrapped by every parse error of this package.
var ErrInvalid = errors.New("invalid amount")

// Format returns raw (a base-10 unsigned integer in base units, such as the
// `amount` string of getTokenSupply) as a token amount with the given
// decimals: Format("999999999123456789", 9) is "999999999.123456789" and
// Format("1000000000000", 6) is "1000000".
func Format(raw string, decimals uint8) (string, error) {
	digits, err := normalize(raw)
	if err != nil {
		return "", err
	}
	d := int(decimals)
	if d == 0 {
		return digits, nil
	}
	if len(digits) <= d {
		digits = strings.Repeat("0", d-len(digits)+1) + digits
	}
	intPart, frac := digits[:len(digits)-d], strings.TrimRight(digits[len(digits)-d:], "0")
	if frac == "" {
		return intPart, nil
	}
	return intPart + "." + frac, nil
}

// MustFormat is Format for values already validated (documents this service
// wrote itself); it panics on invalid input.
func MustFormat(raw string, decimals uint8) string {
	s, err := Format(raw, decimals)
	if err != nil {
		panic(err)
	}
	return s
}

// ToRaw converts a decimal token amount ("1000000000", "12.5") into base
// units at the given decimals. More fraction digits than decimals is an
// error, never a rounding.
func ToRaw(value string, decimals uint8) (string, error) {
	intPart, frac, hasPoint := strings.Cut(value, ".")
	if hasPoint && frac == "" || intPart == "" {
		return "", fmt.Errorf("%w: %q is not a plain decimal number", ErrInvalid, value)
	}
	if len(frac) > int(decimals) {
		return "", fmt.Errorf("%w: %q has more than %d fraction digits", ErrInvalid, value, decimals)
	}
	for _, s := range []string{intPart, frac} {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return "", fmt.Errorf("%w: %q is not a plain decimal number", ErrInvalid, value)
			}
		}
	}
	return normalize(intPart + frac + strings.Repeat("0", int(decimals)-len(frac)))
}

// ParseU64 checks that raw is a base-10 integer that fits in a u64 (the
// ledger's amount type) and returns it normalized.
func ParseU64(raw string) (string, error) {
	digits, err := normalize(raw)
	if err != nil {
		return "", err
	}
	var n big.Int
	n.SetString(digits, 10)
	if n.BitLen() > 64 {
		return "", fmt.Errorf("%w: %s exceeds the u64 maximum", ErrInvalid, digits)
	}
	return digits, nil
}

// Compare compares two raw amounts numerically (-1, 0, +1). Both must be
// valid; an invalid one compares as zero.
func Compare(a, b string) int {
	var x, y big.Int
	x.SetString(a, 10)
	y.SetString(b, 10)
	return x.Cmp(&y)
}

// normalize validates a raw base-10 unsigned integer and strips leading
// zeros ("0" stays "0").
func normalize(raw string) (string, error) {
	if raw == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	}
	if len(raw) > maxDigits {
		return "", fmt.Errorf("%w: %d digits is more than %d", ErrInvalid, len(raw), maxDigits)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return "", fmt.Errorf("%w: %q is not an unsigned base-10 integer", ErrInvalid, raw)
		}
	}
	s := strings.TrimLeft(raw, "0")
	if s == "" {
		return "0", nil
	}
	return s, nil
}
