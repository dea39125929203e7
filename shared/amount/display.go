package amount

// The display precision of derived figures (docs/api.md, Conventions;
// docs/decisions.md, Bodies). A figure computed from inputs is published
// no more precisely than its least precise input, so that it looks as
// exact as it is: a price known to 4 significant digits times an exact
// supply is a market cap known to 4 significant digits, not to 20.
//
//   - Significant digits of an input are those it was written with
//     (trailing zeros of a fraction count: "1.50" has 3). Exact inputs
//     (supplies, the stated maximum supply) do not limit a product.
//   - A product or quotient is rounded to the significant digits of its
//     least precise input.
//   - A USD total (a sum, a market cap, an FDV) is moreover rounded no
//     finer than cents.
//   - Every rounding is one step, half to even, from the exact value.

import "github.com/shopspring/decimal"

// Cents is the finest place of a published USD total.
const Cents = 2

// Significant is the number of significant digits d is written with: the
// digits of its coefficient ("0.005747" has 4, "1.50" has 3, "2210" has
// 4). Zero has 1.
func Significant(d decimal.Decimal) int32 {
	c := d.Coefficient()
	if c.Sign() == 0 {
		return 1
	}
	return int32(len(c.Abs(c).String()))
}

// lead is the power of ten just above d's leading digit: the number of
// digits before the point, negative for zeros after it (0.0057 is -2).
func lead(d decimal.Decimal) int32 {
	c := d.Coefficient()
	return d.Exponent() + int32(len(c.Abs(c).String()))
}

// placesFor is the decimal place of the last of n significant digits of
// d (may be negative: 12340 to 4 digits is place -1).
func placesFor(d decimal.Decimal, n int32) int32 { return n - lead(d) }

// RoundSignificant rounds d half to even to n significant digits (n ≥ 1).
// A d with fewer digits is returned as it is.
func RoundSignificant(d decimal.Decimal, n int32) decimal.Decimal {
	if d.Sign() == 0 || Significant(d) <= n {
		return d
	}
	return d.RoundBank(placesFor(d, max(n, 1)))
}

// RoundUSD rounds a USD total derived from inputs whose least precise has
// sig significant digits: to sig significant digits, and no finer than
// cents, in one half-to-even step. sig ≤ 0 means exact inputs: cents only.
func RoundUSD(d decimal.Decimal, sig int32) decimal.Decimal {
	if d.Sign() == 0 {
		return decimal.Zero
	}
	places := int32(Cents)
	if sig > 0 {
		places = min(places, placesFor(d, sig))
	}
	if d.Exponent() >= -places {
		return d // already no finer than that place
	}
	return d.RoundBank(places)
}
