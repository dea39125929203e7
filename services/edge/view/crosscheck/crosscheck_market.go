package crosscheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/shared/contract"
)

// The price cross-check as clients see it: the market document's
// cross_check (DexScreener against GeckoTerminal, written by the market
// collector on every poll), in /api/price (cross_check), /api/market
// (price_check) and /api/market-data (sources.cross_check); the
// price_sources_disagree warning of the market bodies; and /api/status,
// degraded while the verdict is disagree, held or unconfirmed.

// priceCheckBody is a stored contract.PriceCheck as served. Shares and
// prices are exact JSON numbers (the stored decimals' digits, never a
// float); an empty primary, pair or selected pair is null.
type PriceCheckBody struct {
	Verdict      string            `json:"verdict"`
	Primary      *string           `json:"primary"`
	Pair         *string           `json:"pair"`
	Sources      []priceSourceBody `json:"sources"`
	Deviation    *json.Number      `json:"deviation"`
	Tolerance    json.Number       `json:"tolerance"`
	HoldBound    json.Number       `json:"hold_bound"`
	MoveBound    json.Number       `json:"move_bound"`
	MaxHeldPolls int               `json:"max_held_polls"`
	HeldPolls    int               `json:"held_polls"`
	Pending      *pendingPriceBody `json:"pending"`
	Reason       string            `json:"reason"`
	CheckedAt    string            `json:"checked_at"`
}

type priceSourceBody struct {
	Name         string       `json:"name"`
	State        string       `json:"state"`
	PriceUSD     *json.Number `json:"price_usd"`
	SelectedPair *string      `json:"selected_pair"`
	ErrorKind    *string      `json:"error_kind"`
}

type pendingPriceBody struct {
	Kind     string      `json:"kind"`
	Pair     string      `json:"pair"`
	PriceUSD json.Number `json:"price_usd"`
	Source   string      `json:"source"`
	Since    string      `json:"since"`
}

// priceCheck renders the market document's cross-check; nil (null) when
// there is no document or it carries none (a collector older than the
// cross-check).
func PriceCheck(m *contract.Market) *PriceCheckBody {
	if m == nil || m.CrossCheck == nil {
		return nil
	}
	c := m.CrossCheck
	b := &PriceCheckBody{Verdict: c.Verdict, Primary: orNull(c.Primary), Pair: orNull(c.Pair),
		Sources: make([]priceSourceBody, 0, len(c.Sources)), Deviation: jsonNumberPtr(c.Deviation),
		Tolerance: jsonNumber(c.Tolerance), HoldBound: jsonNumber(c.HoldBound), MoveBound: jsonNumber(c.MoveBound),
		MaxHeldPolls: c.MaxHeldPolls, HeldPolls: c.HeldPolls, Reason: c.Reason, CheckedAt: answer.FormatTime(c.CheckedAt)}
	for _, s := range c.Sources {
		b.Sources = append(b.Sources, priceSourceBody{Name: s.Name, State: s.State, PriceUSD: jsonNumberPtr(s.PriceUSD),
			SelectedPair: orNull(s.SelectedPair), ErrorKind: orNull(s.ErrorKind)})
	}
	if p := c.Pending; p != nil {
		b.Pending = &pendingPriceBody{Kind: p.Kind, Pair: p.Pair, PriceUSD: jsonNumber(p.PriceUSD), Source: p.Source,
			Since: answer.FormatTime(p.Since)}
	}
	return b
}

// priceDisagrees reports whether the cross-check calls for the
// price_sources_disagree warning: the published price is one the two
// aggregators do not agree on (disagree), the last one kept because they
// do not (held), or kept while a change awaits its witness and they
// differ beyond the tolerance (unconfirmed; contract.PriceSourcesDisagree).
func priceDisagrees(c *contract.PriceCheck) bool {
	return contract.PriceSourcesDisagree(c)
}

// marketWarnings are the market document's warnings as served, with the
// price_sources_disagree warning when its cross-check calls for one. The
// collector writes it; the edge adds it, once, when a document lacks it,
// so that a disagreement is never served without its warning.
func MarketWarnings(m *contract.Market) []contract.Warning {
	w := nonNilWarnings(m.Warnings)
	if !priceDisagrees(m.CrossCheck) || slices.ContainsFunc(w, func(x contract.Warning) bool {
		return x.Code == contract.WarnPriceSourcesDisagree
	}) {
		return w
	}
	return append(slices.Clip(w), contract.Warning{Code: contract.WarnPriceSourcesDisagree, Message: m.CrossCheck.Reason})
}

// priceCheckProblem is /api/status's problem of the market document's
// cross-check, "" when there is none: while its verdict degrades the
// service (disagree, held, unconfirmed), one sentence naming the verdict
// and what the aggregators said, built from the check's figures (not the
// collector's words), e.g. "market: price cross-check disagree
// (dexscreener 0.00001234 USD, geckoterminal 0.000013 USD: 5.35% apart,
// tolerance 2%)".
func PriceCheckProblem(m *contract.Market) string {
	if m == nil || m.CrossCheck == nil || !contract.PriceVerdictDegrades(m.CrossCheck.Verdict) {
		return ""
	}
	c := m.CrossCheck
	var seen []string
	for _, s := range c.Sources {
		if s.PriceUSD != nil {
			seen = append(seen, s.Name+" "+s.PriceUSD.String()+" USD")
		} else {
			seen = append(seen, s.Name+" "+s.State)
		}
	}
	detail := strings.Join(seen, ", ")
	if c.Deviation != nil {
		bound, name := c.Tolerance, "tolerance"
		if c.Verdict == contract.PriceHeld {
			bound, name = c.HoldBound, "hold bound"
		}
		detail += ": " + percent(*c.Deviation) + " apart, " + name + " " + percent(bound)
	}
	if c.Verdict == contract.PriceHeld {
		detail += fmt.Sprintf("; the last published price held, poll %d of at most %d", c.HeldPolls, c.MaxHeldPolls)
	}
	if p := c.Pending; p != nil {
		detail += fmt.Sprintf("; %s to %s USD seen by %s only", strings.ReplaceAll(p.Kind, "_", " "), p.PriceUSD.String(), p.Source)
	}
	return "market: price cross-check " + c.Verdict + " (" + detail + ")"
}

// percent is a share as a percentage to two places: 0.053484 is 5.35%.
func percent(share decimal.Decimal) string {
	return share.Mul(decimal.NewFromInt(100)).Round(2).String() + "%"
}

// orNull is s, or nil when empty (JSON null).
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonNumber writes a decimal as a plain-notation JSON number.
func jsonNumber(d decimal.Decimal) json.Number { return json.Number(d.String()) }

func jsonNumberPtr(d *decimal.Decimal) *json.Number {
	if d == nil {
		return nil
	}
	n := jsonNumber(*d)
	return &n
}

func nonNilWarnings(w []contract.Warning) []contract.Warning {
	if w == nil {
		return []contract.Warning{}
	}
	return w
}
