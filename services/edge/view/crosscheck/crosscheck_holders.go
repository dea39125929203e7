package crosscheck

import (
	"fmt"
	"slices"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/shared/contract"
)

// The holders cross-check as clients see it: the holders document's
// cross_check (the count against the second holder source,
// HOLDERS_CROSSCHECK_RPC_URL) in /api/holders, with the
// holders_sources_disagree warning; and /api/status, degraded while the
// last check disagrees.

// HoldersCheckBody is a stored contract.HoldersCheck as served.
type HoldersCheckBody struct {
	Verdict      string            `json:"verdict"`
	Primary      holdersCountBody  `json:"primary"`
	Secondary    *holdersCountBody `json:"secondary"`
	SlotDistance *uint64           `json:"slot_distance"`
	Difference   *uint64           `json:"difference"`
	AllowedChurn *uint64           `json:"allowed_churn"`
	ErrorKind    *string           `json:"error_kind"`
	Reason       string            `json:"reason"`
	CheckedAt    string            `json:"checked_at"`
}

type holdersCountBody struct {
	Method  string `json:"method"`
	Holders uint64 `json:"holders"`
	Slot    uint64 `json:"slot"`
}

// HoldersCheck renders the holders document's cross-check, its reason
// redacted by redact; nil (null) when it carries none (no second source
// configured). The second count, the slot distance, the difference and
// the allowed churn are null when the second source failed; the slot
// distance and the allowed churn also when a count has no slot.
func HoldersCheck(h *contract.Holders, redact func(string) string) *HoldersCheckBody {
	if h == nil || h.CrossCheck == nil {
		return nil
	}
	c := h.CrossCheck
	b := &HoldersCheckBody{Verdict: c.Verdict,
		Primary:   holdersCountBody{Method: c.Primary.Method, Holders: c.Primary.Holders, Slot: c.Primary.Slot},
		ErrorKind: orNull(c.ErrorKind), Reason: redact(c.Reason), CheckedAt: answer.FormatTime(c.CheckedAt)}
	if c.ErrorKind == "" {
		b.Secondary = &holdersCountBody{Method: c.Secondary.Method, Holders: c.Secondary.Holders, Slot: c.Secondary.Slot}
		b.Difference = pointer(c.Difference)
		if c.Primary.Slot != 0 && c.Secondary.Slot != 0 {
			b.SlotDistance, b.AllowedChurn = pointer(c.SlotDistance), pointer(c.AllowedChurn)
		}
	}
	return b
}

// HoldersWarnings are the holders document's warnings as served, redacted
// by redact, with the holders_sources_disagree warning, once, when its
// cross-check disagrees (the collector writes it; the edge adds it when a
// document lacks it).
func HoldersWarnings(h *contract.Holders, redact func(string) string) []contract.Warning {
	w := nonNilWarnings(h.Warnings)
	out := make([]contract.Warning, 0, len(w)+1)
	for _, x := range w {
		out = append(out, contract.Warning{Code: x.Code, Message: redact(x.Message)})
	}
	if h.CrossCheck == nil || h.CrossCheck.Verdict != contract.HoldersDisagree || slices.ContainsFunc(out, func(x contract.Warning) bool {
		return x.Code == contract.WarnHoldersSourcesDisagree
	}) {
		return out
	}
	return append(out, contract.Warning{Code: contract.WarnHoldersSourcesDisagree, Message: redact(h.CrossCheck.Reason)})
}

// HoldersCheckProblem is /api/status's problem of the holders document's
// cross-check, "" unless it disagrees; built from the check's figures, e.g.
// "holders: cross-check disagree (getProgramAccounts 18342 at slot
// 312345600, das 18101 at slot 312345640: 241 apart, 25 allowed over 40
// slots)".
func HoldersCheckProblem(h *contract.Holders) string {
	if h == nil || h.CrossCheck == nil || h.CrossCheck.Verdict != contract.HoldersDisagree {
		return ""
	}
	c := h.CrossCheck
	return fmt.Sprintf("holders: cross-check disagree (%s %d at slot %d, %s %d at slot %d: %d apart, %d allowed over %d slots)",
		c.Primary.Method, c.Primary.Holders, c.Primary.Slot, c.Secondary.Method, c.Secondary.Holders, c.Secondary.Slot,
		c.Difference, c.AllowedChurn, c.SlotDistance)
}
