package view

// Bodies made of the token file mostly: /api/token-metadata,
// /api/exchanges and the OpenAPI document.

import (
	"strings"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

type authoritiesSection struct {
	MintAuthority   *string `json:"mint_authority"`
	FreezeAuthority *string `json:"freeze_authority"`
	TokenProgram    string  `json:"token_program"`
}

type tokenMetadataBody struct {
	Mint          string        `json:"mint"`
	Name          string        `json:"name"`
	Symbol        string        `json:"symbol"`
	Decimals      *uint8        `json:"decimals"`
	Description   *string       `json:"description"`
	Logo          *string       `json:"logo"`
	Links         []config.Link `json:"links"`
	PublicBaseURL *string       `json:"public_base_url"`
	// SigningKeyThumbprint is the token file's statement of the key that
	// signs the answers (null when it states none).
	SigningKeyThumbprint *string                   `json:"signing_key_thumbprint"`
	OnChain              *contract.OnChainMetadata `json:"on_chain"`
	Authorities          *authoritiesSection       `json:"authorities"`
	Warnings             []contract.Warning        `json:"warnings"`
	UpdatedAt            *string                   `json:"updated_at"`
	Stale                bool                      `json:"stale"`
	Missing              []string                  `json:"missing"`
}

func (r *renderer) tokenMetadata() *answer.Answer {
	ds := []contract.Domain{contract.DomainMetadata, contract.DomainSupply}
	in := r.info(ds...)
	name, symbol := r.identity()
	t := r.Token
	b := tokenMetadataBody{Mint: t.Mint, Name: name, Symbol: symbol, Decimals: r.decimals(),
		Description: nonEmpty(t.Description), Logo: nonEmpty(t.Logo), Links: t.Links,
		PublicBaseURL: nonEmpty(t.PublicBaseURL), SigningKeyThumbprint: nonEmpty(t.SigningKeyThumbprint), Warnings: []contract.Warning{},
		UpdatedAt: timePtr(in), Stale: in.Stale, Missing: r.missing(ds...)}
	if b.Links == nil {
		b.Links = []config.Link{}
	}
	if md := r.st.Metadata(); md != nil {
		b.OnChain = md.OnChain
		b.Warnings = append(b.Warnings, md.Warnings...)
	}
	if sp := r.st.Supply(); sp != nil {
		b.Authorities = &authoritiesSection{MintAuthority: sp.MintAuthority, FreezeAuthority: sp.FreezeAuthority,
			TokenProgram: sp.TokenProgram}
	}
	return r.okJSON(b, in)
}

type exchangeBody struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Pair     *string `json:"pair"`
	Base     string  `json:"base"`
	Quote    string  `json:"quote"`
	TradeURL *string `json:"trade_url"`
	InfoURL  *string `json:"info_url"`
	Official bool    `json:"official"`
}

type officialPairLink struct {
	Address string `json:"address"`
	Dex     string `json:"dex"`
	Base    string `json:"base"`
	Quote   string `json:"quote"`
	URL     string `json:"url"`
}

type exchangesBody struct {
	Mint          string             `json:"mint"`
	Name          string             `json:"name"`
	Symbol        string             `json:"symbol"`
	Exchanges     []exchangeBody     `json:"exchanges"`
	OfficialPairs []officialPairLink `json:"official_pairs"`
	API           map[string]string  `json:"api"`
	Explorers     map[string]string  `json:"explorers"`
	Aggregators   map[string]string  `json:"aggregators"`
}

func (r *renderer) exchanges() *answer.Answer {
	t := r.Token
	b := exchangesBody{Mint: t.Mint, Name: t.Name, Symbol: t.Symbol, Exchanges: []exchangeBody{},
		OfficialPairs: []officialPairLink{}, API: map[string]string{},
		Explorers: map[string]string{
			"solscan":         "https://solscan.io/token/" + t.Mint,
			"solana_explorer": "https://explorer.solana.com/address/" + t.Mint,
		},
		Aggregators: map[string]string{
			"dexscreener":   "https://dexscreener.com/solana/" + t.Mint,
			"geckoterminal": "https://www.geckoterminal.com/solana/tokens/" + t.Mint,
		}}
	for _, e := range t.Exchanges {
		b.Exchanges = append(b.Exchanges, exchangeBody{Name: e.Name, Type: e.Type, Pair: nonEmpty(e.Pair), Base: e.Base,
			Quote: e.Quote, TradeURL: nonEmpty(e.TradeURL), InfoURL: nonEmpty(e.InfoURL), Official: e.Official})
	}
	for _, p := range t.OfficialPairs {
		b.OfficialPairs = append(b.OfficialPairs, officialPairLink{Address: p.Address, Dex: p.Dex, Base: p.Base,
			Quote: p.Quote, URL: "https://dexscreener.com/solana/" + p.Address})
	}
	base := strings.TrimSuffix(t.PublicBaseURL, "/")
	for key, path := range map[string]string{
		"total_supply": PathTotalSupply, "circulating_supply": PathCirculatingSupply, "max_supply": PathMaxSupply,
		"supply": PathSupply, "coingecko_supply": PathCoinGeckoSupply, "price": PathPrice, "holders": PathHolders,
		"token_metadata": PathTokenMetadata, "market": PathMarket, "market_data": PathMarketData,
		"market_pairs": PathMarketPairs, "health": PathHealth, "status": PathStatus, "openapi": PathOpenAPI,
	} {
		b.API[key] = base + path
	}
	return r.okJSON(b, answer.DataInfo{})
}

func (r *renderer) openAPI() *answer.Answer {
	return answer.NewOK(answer.ContentJSON, r.cacheControl(answer.GroupStatic), r.OpenAPI, answer.DataInfo{})
}
