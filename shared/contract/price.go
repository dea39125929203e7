package contract

import (
	"errors"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
)

// MaxPriceDigits bounds PriceBasis.Digits: no aggregator figure carries
// more significant digits than this (the market collector keeps 80).
const MaxPriceDigits = 100

// PriceBasis is what the market document's price was computed from: the
// selected pair's figures as the aggregator wrote them, and the
// significant digits the price carries. A decimal read back from JSON has
// lost the trailing zeros of its fraction (0.01230 becomes 0.0123), so
// the precision is carried here rather than guessed from the stored
// price; and a product of the price (market cap, FDV) is rounded once
// from the exact value USD × x / Native, not from the rounded price.
type PriceBasis struct {
	// USD is the pair's priceUsd: the token's USD price when the token is
	// the base, the base token's when it is the quote.
	USD decimal.Decimal `json:"usd"`
	// Native is the pair's priceNative (the base token's price in this
	// token) when the token is the quote: the price is USD / Native. Nil
	// when the token is the base.
	Native *decimal.Decimal `json:"native,omitempty"`
	// Digits is the significant digits of the price: those of USD, or the
	// fewer of USD's and Native's.
	Digits int32 `json:"digits"`
}

// NewPriceBasis is the basis of a price taken from priceUsd and, when the
// token is the pair's quote, priceNative, with the digits the two were
// written with.
func NewPriceBasis(usd decimal.Decimal, native *decimal.Decimal) *PriceBasis {
	b := &PriceBasis{USD: usd, Native: native, Digits: amount.Significant(usd)}
	if native != nil {
		b.Digits = min(b.Digits, amount.Significant(*native))
	}
	return b
}

// Price is the price the basis gives, rounded as the market collector
// publishes it (half up, to Digits, for a quotient).
func (b *PriceBasis) Price() decimal.Decimal {
	if b.Native == nil {
		return b.USD
	}
	return amount.Quotient(b.USD, *b.Native, b.Digits)
}

// Check reports whether the basis is usable and gives price: a document
// of another version or of a faulty writer is not trusted for digits it
// does not prove.
func (b *PriceBasis) Check(price decimal.Decimal) error {
	switch {
	case b.Digits < 1 || b.Digits > MaxPriceDigits:
		return errors.New("price_basis: digits out of range")
	case b.USD.Sign() <= 0 || (b.Native != nil && b.Native.Sign() <= 0):
		return errors.New("price_basis: inputs must be positive")
	case !b.Price().Equal(price):
		return errors.New("price_basis: does not give price_usd")
	}
	return nil
}

// basis is m's price basis when it is present and proves m's price.
func (m *Market) basis() *PriceBasis {
	if m.PriceUSD == nil || m.PriceBasis == nil || m.PriceBasis.Check(*m.PriceUSD) != nil {
		return nil
	}
	return m.PriceBasis
}

// PriceDigits is the significant digits of m's price (0 without a
// price): those its basis states, else those the stored price shows.
func (m *Market) PriceDigits() int32 {
	if m.PriceUSD == nil {
		return 0
	}
	if b := m.basis(); b != nil {
		return b.Digits
	}
	return amount.Significant(*m.PriceUSD)
}

// PriceString is m's price written with its significant digits (trailing
// zeros kept: "0.01230"), or "" without a price.
func (m *Market) PriceString() string {
	if m.PriceUSD == nil {
		return ""
	}
	return amount.WithDigits(*m.PriceUSD, m.PriceDigits())
}

// PriceTimes is m's price × x for an exact x (a supply in whole tokens):
// rounded once from the exact product to the price's significant digits,
// and no finer than cents (amount.RoundUSD). ok is false without a price.
func (m *Market) PriceTimes(x decimal.Decimal) (v decimal.Decimal, ok bool) {
	if m.PriceUSD == nil {
		return decimal.Zero, false
	}
	b := m.basis()
	if b == nil {
		return amount.RoundUSD(m.PriceUSD.Mul(x), amount.Significant(*m.PriceUSD)), true
	}
	den := decimal.NewFromInt(1)
	if b.Native != nil {
		den = *b.Native
	}
	return amount.RoundUSDRatio(b.USD.Mul(x), den, b.Digits), true
}
