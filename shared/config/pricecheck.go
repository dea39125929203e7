package config

import (
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
)

// Defaults of the price cross-check keys of the token file.
const (
	// DefaultPriceTolerance: two aggregators within 2 % of each other
	// agree (they read the same pool at different moments).
	DefaultPriceTolerance = "0.02"
	// DefaultPriceHoldBound: beyond 20 % the price is held.
	DefaultPriceHoldBound = "0.2"
	// DefaultPriceMaxHeldPolls: a price is held for at most 5 polls (5
	// minutes at the default MARKET_REFRESH, within MARKET_TTL's 10).
	DefaultPriceMaxHeldPolls = 5
	// MaxPriceMaxHeldPolls bounds price_max_held_polls.
	MaxPriceMaxHeldPolls = 100
)

// PriceBounds are the token file's price cross-check bounds, defaults
// applied. Shares are exact decimals (0.05 = 5 %).
type PriceBounds struct {
	// Tolerance: prices of the two aggregators within it agree.
	Tolerance decimal.Decimal
	// HoldBound: beyond it (above Tolerance) the last published price is
	// held, for at most MaxHeldPolls polls.
	HoldBound    decimal.Decimal
	MaxHeldPolls int
	// MoveBound: a move beyond it since the last published price, seen by
	// one aggregator only, waits for a second witness. Default: the
	// price_move_warning share (0.5 when unset).
	MoveBound decimal.Decimal
}

// PriceBounds reads the cross-check keys (price_tolerance,
// price_hold_bound, price_move_bound, price_max_held_polls) with their
// defaults, and names the key at fault.
func (t Token) PriceBounds() (PriceBounds, error) {
	var errs []error
	share := func(key, text, def string) decimal.Decimal {
		if text == "" {
			text = def
		}
		d, err := decimal.NewFromString(text)
		if err != nil || d.Sign() <= 0 || d.GreaterThan(decimal.NewFromInt(1000)) || len(text) > 40 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive decimal share such as 0.05 (5 %%)", key, text))
			return decimal.Zero
		}
		return d
	}
	move := t.PriceMoveWarning
	if move == "" {
		move = "0.5"
	}
	b := PriceBounds{
		Tolerance:    share("price_tolerance", t.PriceTolerance, DefaultPriceTolerance),
		HoldBound:    share("price_hold_bound", t.PriceHoldBound, DefaultPriceHoldBound),
		MoveBound:    share("price_move_bound", t.PriceMoveBound, move),
		MaxHeldPolls: DefaultPriceMaxHeldPolls,
	}
	if t.PriceMaxHeldPolls != nil {
		b.MaxHeldPolls = *t.PriceMaxHeldPolls
		if b.MaxHeldPolls < 0 || b.MaxHeldPolls > MaxPriceMaxHeldPolls {
			errs = append(errs, fmt.Errorf("price_max_held_polls: %d is not a number of polls from 0 (never hold) to %d", b.MaxHeldPolls, MaxPriceMaxHeldPolls))
		}
	}
	if len(errs) == 0 && !b.HoldBound.GreaterThan(b.Tolerance) {
		errs = append(errs, fmt.Errorf("price_hold_bound: %s must be above price_tolerance %s", b.HoldBound, b.Tolerance))
	}
	return b, errors.Join(errs...)
}
