package amount

import (
	"math/big"

	"github.com/shopspring/decimal"
)

// Figures derived from a ratio of inputs (a price that is priceUsd /
// priceNative, and its products with a supply) are rounded once from the
// exact ratio, never from an already rounded quotient: rounding the price
// first and the product of the rounded price second is two roundings, and
// can move the product's last published digit.

// Quotient is a / b (a ≥ 0, b > 0) rounded once, half up, to digits
// significant digits; exact when the quotient has no more digits than
// that.
func Quotient(a, b decimal.Decimal, digits int32) decimal.Decimal {
	mag := lead(a) - lead(b) // the quotient's lead is mag or mag+1
	q := a.DivRound(b, digits-mag-1)
	if q.Sign() != 0 && lead(q) <= mag {
		// The lead is mag: one digit short. Redo from a and b (not from
		// q: that would round twice).
		q = a.DivRound(b, digits-mag)
	}
	return q
}

// RoundUSDRatio is RoundUSD of the exact value num / den (den > 0): to
// sig significant digits and no finer than cents, in one half-to-even
// step from the exact ratio. sig ≤ 0 means exact inputs: cents only.
func RoundUSDRatio(num, den decimal.Decimal, sig int32) decimal.Decimal {
	if num.Sign() == 0 || den.Sign() <= 0 {
		return decimal.Zero
	}
	q := new(big.Rat).Quo(num.Rat(), den.Rat())
	neg := q.Sign() < 0
	if neg {
		q.Neg(q)
	}
	places := int32(Cents)
	if sig > 0 {
		places = min(places, sig-ratLead(q))
	}
	d := roundRatHalfEven(q, places)
	if neg {
		d = d.Neg()
	}
	return d
}

// WithDigits writes d with n significant digits where it has fewer
// because trailing zeros of its fraction were dropped on the way (a
// decimal read back from JSON loses them: "0.01230" becomes 0.0123).
// Digits are only added after the point, and only zeros: the value is
// unchanged.
func WithDigits(d decimal.Decimal, n int32) string {
	if d.Sign() == 0 || Significant(d) >= n {
		return d.String()
	}
	places := placesFor(d, n)
	if places <= 0 || places <= -d.Exponent() {
		return d.String()
	}
	return d.StringFixed(places)
}

// ratLead is the number of digits before the point of q > 0 (negative
// for zeros after it), as lead is for a decimal.
func ratLead(q *big.Rat) int32 {
	l := int32(len(q.Num().String()) - len(q.Denom().String())) // the lead is l or l+1
	if q.Cmp(pow10Rat(l)) >= 0 {
		return l + 1
	}
	return l
}

// pow10Rat is 10^e as a rational, for any integer e.
func pow10Rat(e int32) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs32(e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// roundRatHalfEven rounds q ≥ 0 to the given decimal place (negative:
// tens, hundreds...), half to even.
func roundRatHalfEven(q *big.Rat, places int32) decimal.Decimal {
	s := new(big.Rat).Mul(q, pow10Rat(places))
	quo, rem := new(big.Int).QuoRem(s.Num(), s.Denom(), new(big.Int))
	switch c := new(big.Int).Lsh(rem, 1).Cmp(s.Denom()); {
	case c > 0, c == 0 && quo.Bit(0) == 1:
		quo.Add(quo, big.NewInt(1))
	}
	return decimal.NewFromBigInt(quo, -places)
}

func abs32(e int32) int32 {
	if e < 0 {
		return -e
	}
	return e
}
