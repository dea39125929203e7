package fault

import (
	"fmt"
	"math/big"
	"strings"
)

// Aggregator kinds: faults of one market aggregator as a whole, for the
// market collector's cross-check of the price between the two.
const (
	// PriceSkew: the route answers its normal data with every USD price
	// multiplied by 1 + Skew/100 (route=skew:5%, skew:-40%). The market
	// simulator (dexsim) applies it.
	PriceSkew Kind = "skew"
	// Down: the aggregator is down: every connection is reset before any
	// byte (route=down), as Reset does.
	Down Kind = "down"
)

// maxSkew bounds a skew in percent: -100 would make every price zero.
const maxSkew = 10000

func init() {
	Catalog = append(Catalog,
		Info{PriceSkew, "every USD price multiplied by 1 + skew (route=skew:5%, skew:-40%): two aggregators that disagree", "dex"},
		Info{Down, "the aggregator is down: every connection reset before any byte", "dex"},
	)
}

// parseAggregator completes f for the aggregator kinds; handled is false
// for any other kind. s is the whole spec, for errors.
func parseAggregator(f *Fault, s, param string, hasParam bool) (handled bool, err error) {
	switch f.Kind {
	case PriceSkew:
		if !hasParam {
			return true, fmt.Errorf("%q: skew takes a percentage (skew:5%%, skew:-40%%)", s)
		}
		pct := strings.TrimSuffix(param, "%")
		r, ok := new(big.Rat).SetString(pct)
		if !ok || pct == "" || strings.ContainsAny(pct, "/eE") || r.Cmp(big.NewRat(-100, 1)) <= 0 || r.Cmp(big.NewRat(maxSkew, 1)) > 0 {
			return true, fmt.Errorf("%q: %q is not a percentage above -100%% and at most %d%%", s, param, maxSkew)
		}
		f.Skew = pct
		return true, nil
	case Down:
		if hasParam {
			return true, fmt.Errorf("%q: down takes no parameter", s)
		}
		f.Kind = Reset
		return true, nil
	}
	return false, nil
}

// SkewFactor is 1 + Skew/100 of a PriceSkew fault, exactly; nil for any
// other fault or a Skew that is not a decimal.
func (f Fault) SkewFactor() *big.Rat {
	if f.Kind != PriceSkew {
		return nil
	}
	r, ok := new(big.Rat).SetString(f.Skew)
	if !ok {
		return nil
	}
	return r.Add(big.NewRat(1, 1), r.Quo(r, big.NewRat(100, 1)))
}
