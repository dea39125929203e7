package view

// Body of the holders domain: /api/holders.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/services/edge/answer"
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
	// without one (crosscheck_holders.go).
	CrossCheck *holdersCheckBody  `json:"cross_check"`
	Warnings   []contract.Warning `json:"warnings"`
	UpdatedAt  string             `json:"updated_at"`
	Stale      bool               `json:"stale"`
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
		CrossCheck:      r.holdersCheck(h), Warnings: r.holdersWarnings(h),
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
