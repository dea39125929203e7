package view

// Bodies of the supply domain: the plain-text figures, /api/supply and
// /api/coingecko-supply.

import (
	"encoding/json"
	"fmt"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view/crosscheck"
	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// tokenAmount is an exact token amount and its raw twin.
type tokenAmount struct {
	value json.Number
	raw   string
}

func formatAmount(raw string, decimals uint8) (tokenAmount, error) {
	s, err := amount.Format(raw, decimals)
	if err != nil {
		return tokenAmount{}, err
	}
	norm, _ := amount.ToRaw(s, decimals) // normalized raw (no leading zeros)
	return tokenAmount{value: json.Number(s), raw: norm}, nil
}

// maxSupplyWhole is the disclosed maximum supply from the token file, in
// whole tokens; false when the issuer discloses none (or the value cannot
// be read, which New's validation of the token rules out). Never a
// default.
func (in *RenderInputs) MaxSupplyWhole() (string, bool) {
	raw, err := in.Token.MaxSupplyRaw(0)
	if err != nil {
		return "", false
	}
	return raw, true
}

func (r *renderer) maxNotDisclosed() *answer.Answer {
	return answer.NewError(answer.StatusNotFound, answer.CodeNotDisclosed,
		"The token's issuer discloses no maximum supply: this API publishes none, and no fully diluted valuation.", r.RetryAfter)
}

// decimals is the ledger's decimals when the supply document is present,
// else the token file's, else unknown.
func (r *renderer) decimals() *uint8 {
	if sp := r.st.Supply(); sp != nil {
		d := sp.Decimals
		return &d
	}
	return r.Token.Decimals
}

// supplies are the three supplies of the supply document; max is nil
// when the issuer discloses no maximum supply.
type supplies struct {
	decimals           uint8
	total, circulating tokenAmount
	max                *tokenAmount
}

// maxValue and maxRaw are the maximum supply's figures, nil when none
// is disclosed.
func (sp *supplies) maxValue() *json.Number {
	if sp.max == nil {
		return nil
	}
	return &sp.max.value
}

func (sp *supplies) maxRaw() *string {
	if sp.max == nil {
		return nil
	}
	return &sp.max.raw
}

func (r *renderer) supplies() (*supplies, error) {
	sp := r.st.Supply()
	if sp == nil {
		return nil, nil
	}
	total, err := formatAmount(sp.TotalRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("total_raw: %w", err)
	}
	circ, err := formatAmount(sp.CirculatingRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("circulating_raw: %w", err)
	}
	out := &supplies{decimals: sp.Decimals, total: total, circulating: circ}
	if !r.Token.MaxSupplyDisclosed() {
		return out, nil
	}
	maxRaw, err := r.Token.MaxSupplyRaw(sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("token max_supply: %w", err)
	}
	mx, err := formatAmount(maxRaw, sp.Decimals)
	if err != nil {
		return nil, fmt.Errorf("max supply: %w", err)
	}
	out.max = &mx
	return out, nil
}

// ---- plain text ----

func (r *renderer) totalSupply() *answer.Answer {
	return r.supplyText(func(sp *supplies) tokenAmount { return sp.total })
}

func (r *renderer) circulatingSupply() *answer.Answer {
	return r.supplyText(func(sp *supplies) tokenAmount { return sp.circulating })
}

// supplyText renders one supply figure as the plain-text body.
func (r *renderer) supplyText(figure func(*supplies) tokenAmount) *answer.Answer {
	if r.st.Supply() == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	return r.okText(string(figure(sp).value), r.info(contract.DomainSupply))
}

func (r *renderer) maxSupply() *answer.Answer {
	whole, ok := r.MaxSupplyWhole()
	if !ok {
		return r.maxNotDisclosed()
	}
	return r.okText(whole, answer.DataInfo{})
}

// ---- /api/supply, /api/coingecko-supply ----

type supplyBody struct {
	Mint                 string                     `json:"mint"`
	Decimals             uint8                      `json:"decimals"`
	TotalSupply          json.Number                `json:"total_supply"`
	TotalSupplyRaw       string                     `json:"total_supply_raw"`
	CirculatingSupply    json.Number                `json:"circulating_supply"`
	CirculatingSupplyRaw string                     `json:"circulating_supply_raw"`
	MaxSupply            *json.Number               `json:"max_supply"`
	MaxSupplyRaw         *string                    `json:"max_supply_raw"`
	TokenProgram         string                     `json:"token_program"`
	TokenProgramID       string                     `json:"token_program_id"`
	MintAuthority        *string                    `json:"mint_authority"`
	FreezeAuthority      *string                    `json:"freeze_authority"`
	Slot                 uint64                     `json:"slot"`
	Commitment           string                     `json:"commitment"`
	Methodology          contract.Methodology       `json:"methodology"`
	Warnings             []contract.Warning         `json:"warnings"`
	Source               contract.Source            `json:"source"`
	CrossCheck           *crosscheck.CrossCheckBody `json:"cross_check"`
	UpdatedAt            string                     `json:"updated_at"`
	Stale                bool                       `json:"stale"`
}

func (r *renderer) supply() *answer.Answer {
	doc := r.st.Supply()
	if doc == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	in := r.info(contract.DomainSupply)
	m := doc.Methodology
	if m.Rules == nil {
		m.Rules = []string{}
	}
	return r.okJSON(supplyBody{
		Mint: r.Token.Mint, Decimals: sp.decimals,
		TotalSupply: sp.total.value, TotalSupplyRaw: sp.total.raw,
		CirculatingSupply: sp.circulating.value, CirculatingSupplyRaw: sp.circulating.raw,
		MaxSupply: sp.maxValue(), MaxSupplyRaw: sp.maxRaw(),
		TokenProgram: doc.TokenProgram, TokenProgramID: doc.TokenProgramID,
		MintAuthority: doc.MintAuthority, FreezeAuthority: doc.FreezeAuthority,
		Slot: doc.Slot, Commitment: doc.Commitment, Methodology: m,
		Warnings: warnings(doc.Warnings), Source: r.st.Docs[contract.DomainSupply].Env.Source,
		CrossCheck: crosscheck.LedgerBody(doc.CrossCheck, r.Redact),
		UpdatedAt:  answer.FormatTime(in.UpdatedAt), Stale: in.Stale,
	}, in)
}

type coinGeckoBody struct {
	TotalSupply          json.Number  `json:"total_supply"`
	TotalSupplyRaw       string       `json:"total_supply_raw"`
	CirculatingSupply    json.Number  `json:"circulating_supply"`
	CirculatingSupplyRaw string       `json:"circulating_supply_raw"`
	MaxSupply            *json.Number `json:"max_supply"`
	MaxSupplyRaw         *string      `json:"max_supply_raw"`
	Decimals             uint8        `json:"decimals"`
	Mint                 string       `json:"mint"`
	UpdatedAt            string       `json:"updated_at"`
	Stale                bool         `json:"stale"`
}

func (r *renderer) coinGeckoSupply() *answer.Answer {
	if r.st.Supply() == nil {
		return r.unavailable(contract.DomainSupply)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	in := r.info(contract.DomainSupply)
	return r.okJSON(coinGeckoBody{
		TotalSupply: sp.total.value, TotalSupplyRaw: sp.total.raw,
		CirculatingSupply: sp.circulating.value, CirculatingSupplyRaw: sp.circulating.raw,
		MaxSupply: sp.maxValue(), MaxSupplyRaw: sp.maxRaw(),
		Decimals: sp.decimals, Mint: r.Token.Mint,
		UpdatedAt: answer.FormatTime(in.UpdatedAt), Stale: in.Stale,
	}, in)
}
