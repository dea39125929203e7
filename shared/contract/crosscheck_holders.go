package contract

import "time"

// Verdicts of the holders cross-check (HoldersCheck.Verdict): how the
// second holder source's count compares with the published one.
const (
	// HoldersAgreed: the two counts differ by no more than the churn their
	// slots allow (HoldersCheck.AllowedChurn).
	HoldersAgreed = "agreed"
	// HoldersDisagree: they differ by more: the primary's count is
	// published (never an average) with the WarnHoldersSourcesDisagree
	// warning, and the service is degraded until a check agrees again.
	HoldersDisagree = "disagree"
	// HoldersNotChecked: the second source failed (ErrorKind says how):
	// the primary's count is published unconfirmed.
	HoldersNotChecked = "not_checked"
)

// HoldersVerdicts lists every verdict in a stable order (metrics).
var HoldersVerdicts = []string{HoldersAgreed, HoldersDisagree, HoldersNotChecked}

// WarnHoldersSourcesDisagree is the holders warning of a published count
// that the second holder source does not confirm (verdict HoldersDisagree).
const WarnHoldersSourcesDisagree = "holders_sources_disagree"

// HoldersCheck is the cross-check of the holders count against a second
// holder source (HOLDERS_CROSSCHECK_RPC_URL), made every
// HOLDERS_CROSSCHECK_EVERY × HOLDERS_REFRESH with a live count (the
// default), every HOLDERS_CROSSCHECK_EVERY-th poll with scans; the
// documents between two checks carry the last one (CheckedAt says when).
// Holders.CrossCheck is nil when no second source is configured.
type HoldersCheck struct {
	// Verdict is one of the Holders* verdicts.
	Verdict string `json:"verdict"`
	// Primary and Secondary are the two counts; Secondary is 0 when the
	// second source failed.
	Primary   HoldersCount `json:"primary"`
	Secondary HoldersCount `json:"secondary"`
	// SlotDistance is |primary slot − secondary slot|.
	SlotDistance uint64 `json:"slot_distance"`
	// Difference is |primary holders − secondary holders|.
	Difference uint64 `json:"difference"`
	// AllowedChurn is the difference the slot distance allows:
	// HOLDERS_CROSSCHECK_CHURN_FLOOR + HOLDERS_CROSSCHECK_CHURN_PER_SLOT ×
	// SlotDistance (docs/decisions.md).
	AllowedChurn uint64 `json:"allowed_churn"`
	// ErrorKind is the second source's failure (verdict HoldersNotChecked).
	ErrorKind string `json:"error_kind,omitempty"`
	// Reason says the verdict in words.
	Reason string `json:"reason"`
	// CheckedAt is when the second source was read.
	CheckedAt time.Time `json:"checked_at"`
}

// HoldersCount is one source's count in a cross-check.
type HoldersCount struct {
	// Method is HoldersMethodGPA or HoldersMethodDAS.
	Method string `json:"method"`
	// Holders is the count of unique owners with a positive balance.
	Holders uint64 `json:"holders"`
	// Slot is the ledger slot of the count (0 when unknown).
	Slot uint64 `json:"slot"`
}
