package view

// Body of the holders domain: /api/holders.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view/crosscheck"
	"github.com/tokendata/tokendata/shared/contract"
)

type holdersBody struct {
	Mint            string          `json:"mint"`
	Holders         uint64          `json:"holders"`
	TokenAccounts   uint64          `json:"token_accounts"`
	NonZeroAccounts uint64          `json:"non_zero_accounts"`
	Method          string          `json:"method"`
	Queries         []string        `json:"queries"`
	Slot            uint64          `json:"slot"`
	DurationSeconds json.Number     `json:"duration_seconds"`
	Source          contract.Source `json:"source"`
	// CrossCheck is the count against the second holder source; null
	// without one (crosscheck/crosscheck_holders.go).
	CrossCheck *crosscheck.HoldersCheckBody `json:"cross_check"`
	Warnings   []contract.Warning           `json:"warnings"`
	// Live describes a live count (method live): its anchor and last
	// resync; null for an enumeration's count.
	Live      *holdersLiveBody `json:"live"`
	UpdatedAt string           `json:"updated_at"`
	Stale     bool             `json:"stale"`
}

// holdersLiveBody is a stored contract.HoldersLive as served.
type holdersLiveBody struct {
	AnchorMethod        string             `json:"anchor_method"`
	AnchorSlot          uint64             `json:"anchor_slot"`
	AnchoredAt          string             `json:"anchored_at"`
	AnchorTokenAccounts uint64             `json:"anchor_token_accounts"`
	Notifications       uint64             `json:"notifications"`
	NextResyncAt        string             `json:"next_resync_at"`
	Resync              *holdersResyncBody `json:"resync"`
}

type holdersResyncBody struct {
	Agreed     bool   `json:"agreed"`
	Live       uint64 `json:"live"`
	Enumerated uint64 `json:"enumerated"`
	Slot       uint64 `json:"slot"`
	CheckedAt  string `json:"checked_at"`
}

// holdersLive renders a live count's description; nil (null) for an
// enumeration's count.
func holdersLive(h *contract.Holders) *holdersLiveBody {
	l := h.Live
	if l == nil || h.Method != contract.HoldersMethodLive {
		return nil
	}
	b := &holdersLiveBody{AnchorMethod: l.AnchorMethod, AnchorSlot: l.AnchorSlot, AnchoredAt: answer.FormatTime(l.AnchoredAt),
		AnchorTokenAccounts: l.AnchorTokenAccounts, Notifications: l.Notifications, NextResyncAt: answer.FormatTime(l.NextResyncAt)}
	if r := l.Resync; r != nil {
		b.Resync = &holdersResyncBody{Agreed: r.Agreed, Live: r.Live, Enumerated: r.Enumerated, Slot: r.Slot, CheckedAt: answer.FormatTime(r.CheckedAt)}
	}
	return b
}

// holdersLiveProblem is /api/status's problem of a live count whose last
// resync found a difference, "" otherwise.
func holdersLiveProblem(h *contract.Holders) string {
	if h == nil || h.Method != contract.HoldersMethodLive || h.Live == nil || h.Live.Resync == nil || h.Live.Resync.Agreed {
		return ""
	}
	r := h.Live.Resync
	return fmt.Sprintf("holders: the live count differed at its resync (live %d, enumerated %d at slot %d)", r.Live, r.Enumerated, r.Slot)
}

func (r *renderer) holders() *answer.Answer {
	h := r.st.Holders()
	if h == nil {
		if run, ok := r.st.Statuses[contract.CollectorHolders].Runs[contract.DomainHolders]; ok &&
			!run.OK && run.ErrorKind == contract.ErrKindUnsupported {
			// The remedy first, whole: it is what the reader must do; the
			// node's own words after it, bounded.
			msg := "The ledger RPC node cannot enumerate token accounts, so no holder count exists. "
			if run.Remedy != "" {
				msg += r.redactN(sentence(firstUpper(run.Remedy)), maxRemedy)
			} else {
				msg += "Set HOLDERS_RPC_URL to a node that serves getProgramAccounts for token accounts, or HOLDERS_METHOD=das with a DAS provider."
			}
			if run.Error != "" {
				msg += " The node said: " + r.Redact(sentence(run.Error))
			}
			return answer.NewError(answer.StatusServiceUnavailable, answer.CodeHoldersUnavailable, msg, r.RetryAfter)
		}
		return r.unavailable(contract.DomainHolders)
	}
	in := r.info(contract.DomainHolders)
	q := h.Queries
	if q == nil {
		q = []string{}
	}
	return r.okJSON(holdersBody{Mint: r.Token.Mint, Holders: h.Holders, TokenAccounts: h.TokenAccounts,
		NonZeroAccounts: h.NonZeroAccounts, Method: h.Method, Queries: q, Slot: h.Slot,
		DurationSeconds: json.Number(strconv.FormatFloat(max(h.DurationSeconds, 0), 'f', 3, 64)),
		Source:          r.st.Docs[contract.DomainHolders].Env.Source,
		CrossCheck:      crosscheck.HoldersCheck(h, r.Redact), Warnings: crosscheck.HoldersWarnings(h, r.Redact), Live: holdersLive(h),
		UpdatedAt: answer.FormatTime(in.UpdatedAt), Stale: in.Stale}, in)
}

// firstUpper capitalises the first letter of s (ASCII).
func firstUpper(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// sentence ends s with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
