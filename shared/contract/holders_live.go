package contract

import "time"

// A live holder count (HOLDERS_WS_URL): the holders collector subscribes
// to the token program's accounts of the mint (programSubscribe), anchors
// the notifications on a getProgramAccounts enumeration read at a known
// slot, and publishes the count they keep exact (Holders.Method
// HoldersMethodLive, Holders.Slot the slot of the last notification
// applied). A gap in the stream ends it: the next document is an
// enumeration's until a new one anchors the count again. Every
// HOLDERS_RESYNC an enumeration re-anchors it, and the two counts are
// compared at the same slot (HoldersLive.Resync).

// WarnHoldersLiveDiffered is the holders warning of a live count whose
// last resync found a difference between the count the notifications
// kept and the new enumeration's (the new one is published).
const WarnHoldersLiveDiffered = "holders_live_count_differed"

// HoldersLive describes a live count.
type HoldersLive struct {
	// AnchorMethod is the enumeration's method (HoldersMethodGPA).
	AnchorMethod string `json:"anchor_method"`
	// AnchorSlot is the slot of the enumeration the count is anchored
	// on; AnchoredAt is when that enumeration started.
	AnchorSlot uint64    `json:"anchor_slot"`
	AnchoredAt time.Time `json:"anchored_at"`
	// AnchorTokenAccounts is the enumeration's number of token accounts:
	// Holders.TokenAccounts adds those created since and still counts
	// those closed since (a node does not notify a closure to a
	// token-program subscription).
	AnchorTokenAccounts uint64 `json:"anchor_token_accounts"`
	// Notifications is how many notifications were applied since the
	// anchor.
	Notifications uint64 `json:"notifications"`
	// NextResyncAt is when the next enumeration re-anchors the count.
	NextResyncAt time.Time `json:"next_resync_at"`
	// Resync is the last comparison of the live count with a new
	// enumeration at the same slot; nil before the first resync.
	Resync *HoldersResync `json:"resync,omitempty"`
}

// HoldersResync is a live count compared with the enumeration that
// re-anchored it, both at Slot.
type HoldersResync struct {
	// Agreed is true when the two counts are equal.
	Agreed bool `json:"agreed"`
	// Live and Enumerated are the two holder counts.
	Live       uint64 `json:"live"`
	Enumerated uint64 `json:"enumerated"`
	// Slot is the slot both counts are exact at.
	Slot uint64 `json:"slot"`
	// CheckedAt is when they were compared.
	CheckedAt time.Time `json:"checked_at"`
}
