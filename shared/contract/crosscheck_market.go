package contract

import (
	"time"

	"github.com/shopspring/decimal"
)

// Verdicts of the price cross-check (PriceCheck.Verdict): how the two
// aggregators' prices of the selected pair compare, and what the market
// collector did with the poll.
const (
	// PriceAgreed: both aggregators price the selected pair within the
	// token file's price_tolerance of each other.
	PriceAgreed = "agreed"
	// PriceDisagree: they differ by more than price_tolerance; the
	// primary's figures are published with both prices and the
	// WarnPriceSourcesDisagree warning (within price_hold_bound, or after
	// price_max_held_polls polls beyond it).
	PriceDisagree = "disagree"
	// PriceHeld: they differ by more than price_hold_bound: the last
	// published document stays (its updated_at unchanged, so it goes stale
	// when due) with this cross-check, for at most price_max_held_polls
	// polls.
	PriceHeld = "held"
	// PriceUnconfirmed: the primary's price moved by more than the token
	// file's price_move_bound, or its selected pair changed, and neither
	// the other aggregator nor the previous poll saw it (Pending): the last
	// published document stays until the next poll confirms it. When the
	// aggregators also differ beyond price_tolerance (within
	// price_hold_bound) the verdict stays unconfirmed (it says what is
	// published: the last price), and the Reason and the
	// WarnPriceSourcesDisagree warning say that they disagree.
	PriceUnconfirmed = "unconfirmed"
	// PriceSingleSource: only one aggregator priced the pair (the other is
	// down, disabled, or does not list the pool): its figures are
	// published, not cross-checked.
	PriceSingleSource = "single_source"
	// PriceNotPriced: the primary lists no usable pair: there is no price
	// to compare.
	PriceNotPriced = "not_priced"
)

// PriceVerdicts lists every verdict in a stable order (metrics).
var PriceVerdicts = []string{PriceAgreed, PriceDisagree, PriceHeld, PriceUnconfirmed, PriceSingleSource, PriceNotPriced}

// PriceVerdictDegrades reports whether a verdict makes the service
// degraded: the published price is not agreed by both aggregators, or is
// held back.
func PriceVerdictDegrades(v string) bool {
	return v == PriceDisagree || v == PriceHeld || v == PriceUnconfirmed
}

// WarnPriceSourcesDisagree is the market warning of a published price
// that the two aggregators do not agree on (PriceSourcesDisagree: verdict
// PriceDisagree or PriceHeld, or PriceUnconfirmed while they differ
// beyond the tolerance).
const WarnPriceSourcesDisagree = "price_sources_disagree"

// PriceSourcesDisagree reports whether c calls for the
// WarnPriceSourcesDisagree warning: the aggregators differ beyond the
// tolerance, whether the primary's price is published (PriceDisagree),
// the last one held because of the gap (PriceHeld), or the last one held
// because a move or new pair awaits its second witness (PriceUnconfirmed
// with a Deviation beyond Tolerance): a pending change never hides a
// disagreement.
func PriceSourcesDisagree(c *PriceCheck) bool {
	if c == nil {
		return false
	}
	switch c.Verdict {
	case PriceDisagree, PriceHeld:
		return true
	case PriceUnconfirmed:
		return c.Deviation != nil && c.Deviation.GreaterThan(c.Tolerance)
	}
	return false
}

// States of one aggregator in a cross-check (PriceSource.State).
const (
	// SourceOK: the aggregator answered and prices the compared pair.
	SourceOK = "ok"
	// SourceDown: the request failed (ErrorKind says how).
	SourceDown = "down"
	// SourceNoPair: it answered but lists no usable price for the
	// compared pair.
	SourceNoPair = "no_pair"
	// SourceNotRead: it is not read (MARKET_DISABLE_FALLBACK).
	SourceNotRead = "not_read"
)

// Kinds of a pending change (PendingPrice.Kind).
const (
	PendingPriceMove  = "price_move"
	PendingPairChange = "pair_change"
)

// PriceCheck is the cross-check of the market document's price between
// the two aggregators, written by the market collector on every poll
// (Market.CrossCheck; nil in documents written before it existed).
// Deviation and the bounds are shares (0.05 = 5 %), exact decimals.
type PriceCheck struct {
	// Verdict is one of the Price* verdicts.
	Verdict string `json:"verdict"`
	// Primary is the aggregator whose figures the document carries
	// (UpstreamDexScreener, or UpstreamGeckoTerminal when DexScreener is
	// down); "" when neither priced the token.
	Primary string `json:"primary"`
	// Pair is the pool address whose price is compared (the primary's
	// selected pair); "" when there is none.
	Pair string `json:"pair"`
	// Sources are both aggregators, DexScreener first.
	Sources []PriceSource `json:"sources"`
	// Deviation is |secondary − primary| / primary for Pair; nil when only
	// one price exists.
	Deviation *decimal.Decimal `json:"deviation"`
	// Tolerance, HoldBound and MoveBound are the token file's
	// price_tolerance, price_hold_bound and price_move_bound.
	Tolerance decimal.Decimal `json:"tolerance"`
	HoldBound decimal.Decimal `json:"hold_bound"`
	MoveBound decimal.Decimal `json:"move_bound"`
	// HeldPolls counts the consecutive polls whose deviation is beyond
	// HoldBound, this one included; MaxHeldPolls is the token file's
	// price_max_held_polls. Past it the primary's price is published
	// (verdict PriceDisagree).
	HeldPolls    int `json:"held_polls"`
	MaxHeldPolls int `json:"max_held_polls"`
	// Pending is the change that awaits its second witness (verdict
	// PriceUnconfirmed); nil otherwise.
	Pending *PendingPrice `json:"pending"`
	// Reason says in words what the verdict means for this poll.
	Reason string `json:"reason"`
	// CheckedAt is when the aggregators were read. It moves on every poll,
	// also while the document's updated_at stays (a held price).
	CheckedAt time.Time `json:"checked_at"`
}

// PriceSource is one aggregator's answer in a cross-check.
type PriceSource struct {
	// Name is UpstreamDexScreener or UpstreamGeckoTerminal.
	Name string `json:"name"`
	// State is SourceOK, SourceDown, SourceNoPair or SourceNotRead.
	State string `json:"state"`
	// PriceUSD is its USD price of the token in the compared pair (nil
	// unless State is SourceOK).
	PriceUSD *decimal.Decimal `json:"price_usd"`
	// SelectedPair is the pair it would select by itself ("" when none).
	SelectedPair string `json:"selected_pair"`
	// ErrorKind is the failure of a SourceDown (a contract.ErrKind*).
	ErrorKind string `json:"error_kind,omitempty"`
}

// PendingPrice is a price move or pair change seen by one witness only.
type PendingPrice struct {
	// Kind is PendingPriceMove or PendingPairChange.
	Kind string `json:"kind"`
	// Pair and PriceUSD are the unconfirmed selection and price.
	Pair     string          `json:"pair"`
	PriceUSD decimal.Decimal `json:"price_usd"`
	// Source is the aggregator that saw it.
	Source string `json:"source"`
	// Since is when it was first seen.
	Since time.Time `json:"since"`
}
