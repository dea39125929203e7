package edge

// Body of the holders domain: /api/holders.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

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
	UpdatedAt       string          `json:"updated_at"`
	Stale           bool            `json:"stale"`
}

func (r *renderer) holders() *response {
	h := r.st.holders()
	if h == nil {
		if run, ok := r.st.statuses[contract.CollectorHolders].Runs[contract.DomainHolders]; ok &&
			!run.OK && run.ErrorKind == contract.ErrKindUnsupported {
			msg := "The ledger RPC node cannot enumerate token accounts, so no holder count exists."
			if run.Error != "" {
				msg += " " + sentence(run.Error)
			}
			if run.Remedy != "" {
				msg += " " + sentence(run.Remedy)
			} else {
				msg += " Set HOLDERS_RPC_URL to a node that serves getProgramAccounts for token accounts, or HOLDERS_METHOD=das with a DAS provider."
			}
			return newError(http.StatusServiceUnavailable, codeHoldersUnavailable, r.redact(msg), r.cfg.RetryAfter)
		}
		return r.unavailable(contract.DomainHolders)
	}
	in := r.info(contract.DomainHolders)
	q := h.Queries
	if q == nil {
		q = []string{}
	}
	return r.okJSON(holdersBody{Mint: r.token.Mint, Holders: h.Holders, TokenAccounts: h.TokenAccounts,
		NonZeroAccounts: h.NonZeroAccounts, Method: h.Method, Queries: q, Slot: h.Slot,
		DurationSeconds: json.Number(strconv.FormatFloat(max(h.DurationSeconds, 0), 'f', 3, 64)),
		Source:          r.st.docs[contract.DomainHolders].env.Source,
		UpdatedAt:       formatTime(in.updatedAt), Stale: in.stale}, in)
}

// sentence ends s with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
