package dexsim

import (
	"math/big"
	"net/http"
	"slices"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// skewOf returns the factor of a fault.PriceSkew injected for r (nil:
// none): the route then serves every USD price times it, so that the two
// aggregators disagree by a known share.
func skewOf(r *http.Request) *big.Rat {
	f, ok := fault.FromContext(r.Context())
	if !ok {
		return nil
	}
	return f.SkewFactor()
}

// skewed is m with every pair's USD price (priceUsd, the base token's)
// multiplied by factor, exactly: the token's USD price in every pair moves
// by the same factor, whether it is the base or the quote. Native prices
// stay. m itself is not changed. The caller holds the read lock.
func skewed(m *Market, factor *big.Rat) *Market {
	if factor == nil {
		return m
	}
	c := *m
	c.Pairs = slices.Clone(m.Pairs)
	for i := range c.Pairs {
		p := &c.Pairs[i]
		if usd, ok := parseDec(p.PriceUSD); ok {
			p.PriceUSD = ratText(usd.Mul(usd, factor))
		}
	}
	return &c
}
