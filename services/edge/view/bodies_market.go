package view

// Bodies of the market domain: /api/price, /api/market, /api/market-data
// and /api/market-pairs.

import (
	"encoding/json"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view/crosscheck"
	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// pairBody is a pair as the price and market endpoints show it.
type pairBody struct {
	Address      string            `json:"address"`
	Dex          string            `json:"dex"`
	URL          string            `json:"url"`
	Side         string            `json:"side"`
	Base         contract.TokenRef `json:"base"`
	Quote        contract.TokenRef `json:"quote"`
	LiquidityUSD *json.Number      `json:"liquidity_usd"`
	Official     bool              `json:"official"`
}

func newPairBody(p *contract.Pair) *pairBody {
	if p == nil {
		return nil
	}
	return &pairBody{Address: p.Address, Dex: p.DexID, URL: p.URL, Side: p.Side, Base: p.Base, Quote: p.Quote,
		LiquidityUSD: numPtr(p.LiquidityUSD), Official: p.Official}
}

type priceBody struct {
	Mint        string                     `json:"mint"`
	PriceUSD    json.Number                `json:"price_usd"`
	PriceQuote  *json.Number               `json:"price_quote"`
	QuoteSymbol string                     `json:"quote_symbol"`
	Pair        *pairBody                  `json:"pair"`
	Source      contract.Source            `json:"source"`
	CrossCheck  *crosscheck.PriceCheckBody `json:"cross_check"`
	Warnings    []contract.Warning         `json:"warnings"`
	UpdatedAt   string                     `json:"updated_at"`
	Stale       bool                       `json:"stale"`
}

// noMarket answers /api/price when the aggregator has no usable pair.
func (r *renderer) noMarket(m *contract.Market) *answer.Answer {
	msg := "The market aggregator lists no trading pair for this token (not indexed)."
	if m.Status == contract.MarketNoUsablePair {
		msg = "The market aggregator lists pairs for this token, but none has a usable USD price; see /api/market-pairs."
	}
	return answer.NewError(answer.StatusServiceUnavailable, answer.CodeNoMarket, msg, r.RetryAfter)
}

func (r *renderer) price() *answer.Answer {
	m := r.st.Market()
	if m == nil {
		return r.unavailable(contract.DomainMarket)
	}
	if m.Status != contract.MarketOK {
		r.info(contract.DomainMarket) // still re-render when it expires
		return r.noMarket(m)
	}
	in := r.info(contract.DomainMarket)
	return r.okJSON(priceBody{
		Mint: r.Token.Mint, PriceUSD: priceNum(m), PriceQuote: numPtr(m.PriceQuote),
		QuoteSymbol: m.QuoteSymbol, Pair: newPairBody(m.Selected),
		Source: r.st.Docs[contract.DomainMarket].Env.Source, CrossCheck: crosscheck.PriceCheck(m),
		Warnings: crosscheck.MarketWarnings(m), UpdatedAt: answer.FormatTime(in.UpdatedAt), Stale: in.Stale,
	}, in)
}

// valuation computes market cap (price × circulating supply) and FDV
// (price × maximum supply) in exact arithmetic from the price's basis,
// published at the precision of the price: the supplies are exact, so
// the product has the price's significant digits (carried by the market
// document, never read back from the stored price), and as a USD total
// no finer than cents, rounded once (contract.Market.PriceTimes). FDV is
// nil when the issuer discloses no maximum supply.
func (r *renderer) valuation(m *contract.Market, sp *supplies) (mcap, fdv *json.Number) {
	if m == nil || m.PriceUSD == nil {
		return nil, nil
	}
	if sp != nil {
		if c, err := decimal.NewFromString(string(sp.circulating.value)); err == nil {
			v, _ := m.PriceTimes(c)
			mcap = ptr(num(v))
		}
	}
	if whole, ok := r.MaxSupplyWhole(); ok {
		if mx, err := decimal.NewFromString(whole); err == nil {
			v, _ := m.PriceTimes(mx)
			fdv = ptr(num(v))
		}
	}
	return mcap, fdv
}

// priceNum is the market's price (m.PriceUSD set) with the significant
// digits it carries: "0.01230", not the 0.0123 the stored decimal shows.
func priceNum(m *contract.Market) json.Number { return json.Number(m.PriceString()) }

func priceNumPtr(m *contract.Market) *json.Number {
	if m.PriceUSD == nil {
		return nil
	}
	return ptr(priceNum(m))
}

// usdTotal is a sum of the aggregator's USD figures as published: to the
// cent.
func usdTotal(d decimal.Decimal) json.Number { return num(amount.RoundUSD(d, 0)) }

// pairCounts are the pairs of a market document by what the rule did
// with them: detected (every pair the aggregator listed), kept (counted
// in the totals) and usable (candidates for the price).
type pairCounts struct {
	Detected int `json:"pairs_detected"`
	Kept     int `json:"pairs_kept"`
	Usable   int `json:"pairs_usable"`
}

func countPairs(m *contract.Market) pairCounts {
	c := pairCounts{Detected: len(m.Pairs)}
	for i := range m.Pairs {
		if m.Pairs[i].Side != "" { // a pair the rule does not keep has no side
			c.Kept++
		}
		if m.Pairs[i].Usable {
			c.Usable++
		}
	}
	return c
}

// marketDomains are the domains of the composite market bodies.
var marketDomains = []contract.Domain{contract.DomainMarket, contract.DomainSupply, contract.DomainHolders}

type MarketBody struct {
	Mint                  string                     `json:"mint"`
	Name                  string                     `json:"name"`
	Symbol                string                     `json:"symbol"`
	MarketStatus          *string                    `json:"market_status"`
	PriceUSD              *json.Number               `json:"price_usd"`
	PriceChange24hPercent *json.Number               `json:"price_change_24h_percent"`
	LiquidityUSD          *json.Number               `json:"liquidity_usd"`
	Volume24hUSD          *json.Number               `json:"volume_24h_usd"`
	Txns24h               *int64                     `json:"txns_24h"`
	Buys24h               *int64                     `json:"buys_24h"`
	Sells24h              *int64                     `json:"sells_24h"`
	MarketCapUSD          *json.Number               `json:"market_cap_usd"`
	FDVUSD                *json.Number               `json:"fdv_usd"`
	Holders               *uint64                    `json:"holders"`
	Decimals              *uint8                     `json:"decimals"`
	TotalSupply           *json.Number               `json:"total_supply"`
	TotalSupplyRaw        *string                    `json:"total_supply_raw"`
	CirculatingSupply     *json.Number               `json:"circulating_supply"`
	CirculatingSupplyRaw  *string                    `json:"circulating_supply_raw"`
	MaxSupply             *json.Number               `json:"max_supply"`
	MaxSupplyRaw          *string                    `json:"max_supply_raw"`
	PairAddress           *string                    `json:"pair_address"`
	PairDex               *string                    `json:"pair_dex"`
	PairName              *string                    `json:"pair_name"`
	PairURL               *string                    `json:"pair_url"`
	PriceCheck            *crosscheck.PriceCheckBody `json:"price_check"`
	Warnings              []contract.Warning         `json:"warnings"`
	PortalVersion         int                        `json:"portal_version"`
	UpdatedAt             *string                    `json:"updated_at"`
	Stale                 bool                       `json:"stale"`
	Missing               []string                   `json:"missing"`
}

// maxWhole is the maximum supply in whole tokens, nil when none is
// disclosed.
func (r *renderer) maxWhole() *json.Number {
	whole, ok := r.MaxSupplyWhole()
	if !ok {
		return nil
	}
	return ptr(json.Number(whole))
}

// maxRaw is the maximum supply in base units when it is disclosed and
// the decimals are known.
func (r *renderer) maxRaw() *string {
	d := r.decimals()
	if d == nil || !r.Token.MaxSupplyDisclosed() {
		return nil
	}
	raw, err := r.Token.MaxSupplyRaw(*d)
	if err != nil {
		return nil
	}
	return &raw
}

// compositeWarnings are the warnings of the composite bodies (/api/market,
// /api/market-data) and the page: those of each document whose figures
// they show, as that document's own body serves them: the market
// document's (with price_sources_disagree when its cross-check calls for
// it), the supply document's, then the holders document's (with
// holders_sources_disagree when its cross-check disagrees). Never null.
func (r *renderer) compositeWarnings(m *contract.Market) []contract.Warning {
	w := []contract.Warning{}
	if m != nil {
		w = append(w, crosscheck.MarketWarnings(m)...)
	}
	if sp := r.st.Supply(); sp != nil {
		w = append(w, sp.Warnings...)
	}
	if h := r.st.Holders(); h != nil {
		w = append(w, crosscheck.HoldersWarnings(h, r.Redact)...)
	}
	return w
}

func (r *renderer) composite() (in answer.DataInfo, missing []string, ok bool) {
	missing = r.missing(marketDomains...)
	return r.info(marketDomains...), missing, len(missing) < len(marketDomains)
}

func (r *renderer) market() *answer.Answer {
	in, missing, ok := r.composite()
	if !ok {
		return r.unavailable(contract.DomainMarket)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	name, symbol := r.identity()
	b := MarketBody{Mint: r.Token.Mint, Name: name, Symbol: symbol, MaxSupply: r.maxWhole(),
		MaxSupplyRaw: r.maxRaw(), Decimals: r.decimals(), PortalVersion: PortalVersion,
		UpdatedAt: timePtr(in), Stale: in.Stale, Missing: missing}
	m := r.st.Market()
	if m != nil {
		b.MarketStatus = ptr(m.Status)
		b.PriceUSD = priceNumPtr(m)
		b.PriceChange24hPercent = numPtr(m.PriceChange.H24)
		b.LiquidityUSD = ptr(usdTotal(m.LiquidityUSD))
		b.Volume24hUSD = ptr(usdTotal(m.VolumeUSD.H24))
		b.Buys24h, b.Sells24h = ptr(m.Txns.H24.Buys), ptr(m.Txns.H24.Sells)
		b.Txns24h = ptr(m.Txns.H24.Buys + m.Txns.H24.Sells)
		if p := m.Selected; p != nil {
			b.PairAddress, b.PairDex, b.PairURL = ptr(p.Address), ptr(p.DexID), ptr(p.URL)
			b.PairName = ptr(p.Base.Symbol + "/" + p.Quote.Symbol)
		}
		b.PriceCheck = crosscheck.PriceCheck(m)
	}
	b.MarketCapUSD, b.FDVUSD = r.valuation(m, sp)
	b.Warnings = r.compositeWarnings(m)
	if h := r.st.Holders(); h != nil {
		b.Holders = ptr(h.Holders)
	}
	if sp != nil {
		b.TotalSupply, b.TotalSupplyRaw = ptr(sp.total.value), ptr(sp.total.raw)
		b.CirculatingSupply, b.CirculatingSupplyRaw = ptr(sp.circulating.value), ptr(sp.circulating.raw)
	}
	return r.okJSON(b, in)
}

type tokenSection struct {
	Mint     string `json:"mint"`
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	Decimals *uint8 `json:"decimals"`
}

type priceSection struct {
	USD           json.Number                    `json:"usd"`
	Quote         *json.Number                   `json:"quote"`
	QuoteSymbol   string                         `json:"quote_symbol"`
	ChangePercent contract.Windows[*json.Number] `json:"change_percent"`
}

type liquiditySection struct {
	TotalUSD    json.Number  `json:"total_usd"`
	MainPairUSD *json.Number `json:"main_pair_usd"`
}

type txnsSection struct {
	Buys  int64 `json:"buys"`
	Sells int64 `json:"sells"`
	Total int64 `json:"total"`
}

type valuationSection struct {
	MarketCapUSD *json.Number `json:"market_cap_usd"`
	FDVUSD       *json.Number `json:"fdv_usd"`
}

type holdersSection struct {
	Count           uint64 `json:"count"`
	TokenAccounts   uint64 `json:"token_accounts"`
	NonZeroAccounts uint64 `json:"non_zero_accounts"`
	Method          string `json:"method"`
}

type supplySection struct {
	Decimals       uint8        `json:"decimals"`
	Total          json.Number  `json:"total"`
	TotalRaw       string       `json:"total_raw"`
	Circulating    json.Number  `json:"circulating"`
	CirculatingRaw string       `json:"circulating_raw"`
	Max            *json.Number `json:"max"`
	MaxRaw         *string      `json:"max_raw"`
}

type sourceSection struct {
	contract.Source
	UpdatedAt string `json:"updated_at"`
	Stale     bool   `json:"stale"`
}

type sourcesSection struct {
	Market  *sourceSection `json:"market"`
	Supply  *sourceSection `json:"supply"`
	Holders *sourceSection `json:"holders"`
	// CrossCheck is the market document's price cross-check.
	CrossCheck *crosscheck.PriceCheckBody `json:"cross_check"`
}

type marketDataBody struct {
	APIVersion    string                         `json:"api_version"`
	PortalVersion int                            `json:"portal_version"`
	Token         tokenSection                   `json:"token"`
	MarketStatus  *string                        `json:"market_status"`
	Price         *priceSection                  `json:"price"`
	Liquidity     *liquiditySection              `json:"liquidity"`
	VolumeUSD     *contract.Windows[json.Number] `json:"volume_usd"`
	Transactions  *contract.Windows[txnsSection] `json:"transactions"`
	Valuation     valuationSection               `json:"valuation"`
	Holders       *holdersSection                `json:"holders"`
	Supply        *supplySection                 `json:"supply"`
	MainPair      *pairBody                      `json:"main_pair"`
	PairsDetected *int                           `json:"pairs_detected"`
	PairsKept     *int                           `json:"pairs_kept"`
	PairsUsable   *int                           `json:"pairs_usable"`
	// PairCount is the deprecated pairs_detected (removed in 3.0).
	PairCount *int               `json:"pair_count"`
	Sources   sourcesSection     `json:"sources"`
	Warnings  []contract.Warning `json:"warnings"`
	UpdatedAt *string            `json:"updated_at"`
	Stale     bool               `json:"stale"`
	Missing   []string           `json:"missing"`
}

func (r *renderer) source(d contract.Domain) *sourceSection {
	doc := r.st.Docs[d]
	if doc == nil {
		return nil
	}
	at, stale := r.fresh(d)
	return &sourceSection{Source: doc.Env.Source, UpdatedAt: answer.FormatTime(at), Stale: stale}
}

func txns(t contract.Txns) txnsSection {
	return txnsSection{Buys: t.Buys, Sells: t.Sells, Total: t.Buys + t.Sells}
}

func (r *renderer) marketData() *answer.Answer {
	in, missing, ok := r.composite()
	if !ok {
		return r.unavailable(contract.DomainMarket)
	}
	sp, err := r.supplies()
	if err != nil {
		return r.internal(err)
	}
	name, symbol := r.identity()
	b := marketDataBody{APIVersion: APIVersion, PortalVersion: PortalVersion,
		Token:     tokenSection{Mint: r.Token.Mint, Name: name, Symbol: symbol, Decimals: r.decimals()},
		UpdatedAt: timePtr(in), Stale: in.Stale, Missing: missing,
		Sources: sourcesSection{Market: r.source(contract.DomainMarket), Supply: r.source(contract.DomainSupply),
			Holders: r.source(contract.DomainHolders)}}
	m := r.st.Market()
	if m != nil {
		b.MarketStatus = ptr(m.Status)
		if m.PriceUSD != nil {
			b.Price = &priceSection{USD: priceNum(m), Quote: numPtr(m.PriceQuote), QuoteSymbol: m.QuoteSymbol,
				ChangePercent: contract.Windows[*json.Number]{M5: numPtr(m.PriceChange.M5), H1: numPtr(m.PriceChange.H1),
					H6: numPtr(m.PriceChange.H6), H24: numPtr(m.PriceChange.H24)}}
		}
		b.Liquidity = &liquiditySection{TotalUSD: usdTotal(m.LiquidityUSD)}
		if m.Selected != nil {
			b.Liquidity.MainPairUSD = numPtr(m.Selected.LiquidityUSD)
		}
		b.VolumeUSD = &contract.Windows[json.Number]{M5: usdTotal(m.VolumeUSD.M5), H1: usdTotal(m.VolumeUSD.H1),
			H6: usdTotal(m.VolumeUSD.H6), H24: usdTotal(m.VolumeUSD.H24)}
		b.Transactions = &contract.Windows[txnsSection]{M5: txns(m.Txns.M5), H1: txns(m.Txns.H1),
			H6: txns(m.Txns.H6), H24: txns(m.Txns.H24)}
		b.MainPair = newPairBody(m.Selected)
		pc := countPairs(m)
		b.PairsDetected, b.PairsKept, b.PairsUsable = &pc.Detected, &pc.Kept, &pc.Usable
		b.PairCount = ptr(len(m.Pairs))
		b.Sources.CrossCheck = crosscheck.PriceCheck(m)
	}
	b.Warnings = r.compositeWarnings(m)
	b.Valuation.MarketCapUSD, b.Valuation.FDVUSD = r.valuation(m, sp)
	if h := r.st.Holders(); h != nil {
		b.Holders = &holdersSection{Count: h.Holders, TokenAccounts: h.TokenAccounts,
			NonZeroAccounts: h.NonZeroAccounts, Method: h.Method}
	}
	if sp != nil {
		b.Supply = &supplySection{Decimals: sp.decimals, Total: sp.total.value, TotalRaw: sp.total.raw,
			Circulating: sp.circulating.value, CirculatingRaw: sp.circulating.raw, Max: sp.maxValue(), MaxRaw: sp.maxRaw()}
	}
	return r.okJSON(b, in)
}

// pairDetail is a detected pair as /api/market-pairs shows it.
type pairDetail struct {
	pairBody
	PriceUSD     *json.Number `json:"price_usd"`
	PriceQuote   *json.Number `json:"price_quote"`
	Volume24hUSD json.Number  `json:"volume_24h_usd"`
	// VolumeUSD24h is the deprecated name of Volume24hUSD (removed in 3.0).
	VolumeUSD24h json.Number `json:"volume_usd_24h"`
	CreatedAt    *string     `json:"created_at"`
	Labels       []string    `json:"labels"`
	Usable       bool        `json:"usable"`
	Reason       *string     `json:"reason"`
}

type officialPairBody struct {
	Address      string       `json:"address"`
	Found        bool         `json:"found"`
	Selected     bool         `json:"selected"`
	LiquidityUSD *json.Number `json:"liquidity_usd"`
}

type marketPairsBody struct {
	Mint         string             `json:"mint"`
	MarketStatus string             `json:"market_status"`
	Rule         string             `json:"rule"`
	Selected     *pairBody          `json:"selected"`
	Official     []officialPairBody `json:"official"`
	Pairs        []pairDetail       `json:"pairs"`
	pairCounts
	// PairCount is the deprecated pairs_detected (removed in 3.0).
	PairCount int                `json:"pair_count"`
	Warnings  []contract.Warning `json:"warnings"`
	Source    contract.Source    `json:"source"`
	UpdatedAt string             `json:"updated_at"`
	Stale     bool               `json:"stale"`
}

func (r *renderer) marketPairs() *answer.Answer {
	m := r.st.Market()
	if m == nil {
		return r.unavailable(contract.DomainMarket)
	}
	in := r.info(contract.DomainMarket)
	b := marketPairsBody{Mint: r.Token.Mint, MarketStatus: m.Status, Rule: m.Rule, Selected: newPairBody(m.Selected),
		Official: []officialPairBody{}, Pairs: []pairDetail{}, pairCounts: countPairs(m), PairCount: len(m.Pairs), Warnings: crosscheck.MarketWarnings(m),
		Source: r.st.Docs[contract.DomainMarket].Env.Source, UpdatedAt: answer.FormatTime(in.UpdatedAt), Stale: in.Stale}
	for _, o := range m.Official {
		b.Official = append(b.Official, officialPairBody{Address: o.Address, Found: o.Found, Selected: o.Selected,
			LiquidityUSD: numPtr(o.LiquidityUSD)})
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		d := pairDetail{pairBody: *newPairBody(p), PriceUSD: numPtr(p.PriceUSD), PriceQuote: numPtr(p.PriceQuote),
			Volume24hUSD: num(p.VolumeUSD24h), VolumeUSD24h: num(p.VolumeUSD24h), Labels: p.Labels, Usable: p.Usable}
		if d.Labels == nil {
			d.Labels = []string{}
		}
		if p.CreatedAt != nil {
			d.CreatedAt = ptr(answer.FormatTime(*p.CreatedAt))
		}
		if p.Reason != "" {
			d.Reason = ptr(p.Reason)
		}
		b.Pairs = append(b.Pairs, d)
	}
	return r.okJSON(b, in)
}
