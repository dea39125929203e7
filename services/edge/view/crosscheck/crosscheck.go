// Package crosscheck renders the cross-checks behind the published
// figures as clients see them: the ledger nodes' agreement on the supply
// (/api/supply's cross_check, /api/status's checks.ledger_nodes), the
// aggregators' on the price (/api/price, /api/market, /api/market-data)
// and the second holder source's on the holder count (/api/holders),
// with the problems they make /api/status name. Pure: contract records
// in, bodies out.
package crosscheck

import (
	"encoding/json"
	"fmt"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// The ledger cross-check as clients see it: in /api/supply, the check
// that backs the published figure (the supply document's); in
// /api/status, the last poll's, published or not (the supply run of the
// collector's status record). Nodes are numbers, never URLs.

// The status values of a check (view's StatusOK and StatusDegraded).
const (
	checkOK       = "ok"
	checkDegraded = "degraded"
)

// crossCheckHead is what both renderings of a cross-check begin with.
type crossCheckHead struct {
	State          string `json:"state"`
	Nodes          int    `json:"nodes"`
	Quorum         int    `json:"quorum"`
	Agreed         int    `json:"agreed"`
	Slot           uint64 `json:"slot"`
	MinContextSlot uint64 `json:"min_context_slot"`
}

func headOf(c *contract.LedgerCrossCheck) crossCheckHead {
	return crossCheckHead{State: c.State, Nodes: c.Nodes, Quorum: c.Quorum, Agreed: c.Agreed, Slot: c.Slot, MinContextSlot: c.MinContextSlot}
}

// crossCheckBody is /api/supply's cross_check.
type CrossCheckBody struct {
	crossCheckHead
	PerNode []nodeBody `json:"per_node"`
	Issues  []string   `json:"issues"`
}

type nodeBody struct {
	Node        int          `json:"node"`
	Verdict     string       `json:"verdict"`
	Slot        uint64       `json:"slot"`
	Amount      *json.Number `json:"amount"`
	AmountRaw   *string      `json:"amount_raw"`
	Decimals    *uint8       `json:"decimals"`
	SlotsBehind *uint64      `json:"slots_behind"`
	Error       *string      `json:"error"`
}

// crossCheck renders a stored cross-check (nil: none recorded, as a
// collector older than the cross-check writes).
func LedgerBody(c *contract.LedgerCrossCheck, redact func(string) string) *CrossCheckBody {
	if c == nil {
		return nil
	}
	b := &CrossCheckBody{crossCheckHead: headOf(c), PerNode: make([]nodeBody, 0, len(c.PerNode)), Issues: issues(c.Issues, redact)}
	for _, n := range c.PerNode {
		nb := nodeBody{Node: n.Node, Verdict: n.Verdict, Slot: n.Slot, Decimals: n.Decimals}
		if n.AmountRaw != "" {
			nb.AmountRaw = pointer(n.AmountRaw)
			if n.Decimals != nil {
				if v, err := amount.Format(n.AmountRaw, *n.Decimals); err == nil {
					nb.Amount = pointer(json.Number(v))
				}
			}
		}
		if n.SlotsBehind > 0 {
			nb.SlotsBehind = pointer(n.SlotsBehind)
		}
		if n.Error != "" {
			nb.Error = pointer(n.Error)
		}
		b.PerNode = append(b.PerNode, nb)
	}
	return b
}

// issues are a cross-check's issues as served: redacted (they are the
// collector's text), never null.
func issues(in []string, redact func(string) string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, redact(s))
	}
	return out
}

// ledgerNodesCheck is /api/status's checks.ledger_nodes.
type LedgerNodesCheck struct {
	Status string `json:"status"`
	crossCheckHead
	PerNode []ledgerNodeRow `json:"per_node"`
	Issues  []string        `json:"issues"`
}

type ledgerNodeRow struct {
	Node        int     `json:"node"`
	Verdict     string  `json:"verdict"`
	Slot        uint64  `json:"slot"`
	SlotsBehind *uint64 `json:"slots_behind"`
	Error       *string `json:"error"`
}

// ledgerNodes is the status check of the supply collector's last
// cross-check (nil when its record holds none), and the problems it
// names: one per issue, each naming its node by number.
func LedgerNodes(rec contract.Status, redact func(string) string) (*LedgerNodesCheck, []string) {
	run, ok := rec.Runs[contract.DomainSupply]
	if !ok || run.Ledger == nil {
		return nil, nil
	}
	c := run.Ledger
	lc := &LedgerNodesCheck{Status: checkOK, crossCheckHead: headOf(c), PerNode: make([]ledgerNodeRow, 0, len(c.PerNode)), Issues: []string{}}
	for _, n := range c.PerNode {
		row := ledgerNodeRow{Node: n.Node, Verdict: n.Verdict, Slot: n.Slot}
		if n.SlotsBehind > 0 {
			row.SlotsBehind = pointer(n.SlotsBehind)
		}
		if n.Error != "" {
			row.Error = pointer(n.Error)
		}
		lc.PerNode = append(lc.PerNode, row)
	}
	for _, s := range c.Issues {
		lc.Issues = append(lc.Issues, redact(s))
	}
	if c.State == contract.CrossCheckAgreed {
		return lc, nil
	}
	lc.Status = checkDegraded
	problems := make([]string, 0, len(lc.Issues)+1)
	if c.State == contract.CrossCheckNoQuorum {
		problems = append(problems, fmt.Sprintf("ledger nodes: no quorum (%d of %d agree, %d needed); the last agreed supply stays", c.Agreed, c.Nodes, c.Quorum))
	}
	for _, s := range lc.Issues {
		problems = append(problems, "ledger nodes: "+s)
	}
	if len(problems) == 0 {
		problems = append(problems, "ledger nodes: cross-check "+c.State)
	}
	return lc, problems
}

func pointer[T any](v T) *T { return &v }
