package dexsim

import (
	"encoding/json"
	"math/big"
	"strconv"
	"time"
)

// num is a JSON number always written in plain decimal notation (never
// 1e-07), as the aggregators write them.
type num float64

func (n num) MarshalJSON() ([]byte, error) { return []byte(formatFloat(float64(n))), nil }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func numPtr(f float64) *num {
	if f == 0 {
		return nil
	}
	n := num(f)
	return &n
}

// DexScreener pair object. Field order follows the API's responses.
type dsPair struct {
	ChainID     string          `json:"chainId"`
	DexID       string          `json:"dexId"`
	URL         string          `json:"url"`
	PairAddress string          `json:"pairAddress"`
	Labels      []string        `json:"labels,omitempty"`
	BaseToken   dsToken         `json:"baseToken"`
	QuoteToken  dsToken         `json:"quoteToken"`
	PriceNative string          `json:"priceNative"`
	PriceUSD    json.RawMessage `json:"priceUsd,omitempty"`
	Txns        dsTxns          `json:"txns"`
	Volume      dsVolume        `json:"volume"`
	PriceChange dsChange        `json:"priceChange"`
	Liquidity   *dsLiquidity    `json:"liquidity,omitempty"`
	FDV         *num            `json:"fdv,omitempty"`
	MarketCap   *num            `json:"marketCap,omitempty"`
	CreatedAt   int64           `json:"pairCreatedAt,omitempty"`
	Info        *dsInfo         `json:"info,omitempty"`
	Boosts      *dsBoosts       `json:"boosts,omitempty"`
}

type dsToken struct {
	Address string `json:"address"`
	Name    string `json:"name"`
	Symbol  string `json:"symbol"`
}

type dsBuySell struct {
	Buys  int `json:"buys"`
	Sells int `json:"sells"`
}

type dsTxns struct {
	M5  dsBuySell `json:"m5"`
	H1  dsBuySell `json:"h1"`
	H6  dsBuySell `json:"h6"`
	H24 dsBuySell `json:"h24"`
}

type dsVolume struct {
	H24 num `json:"h24"`
	H6  num `json:"h6"`
	H1  num `json:"h1"`
	M5  num `json:"m5"`
}

type dsChange struct {
	M5  *num `json:"m5,omitempty"`
	H1  *num `json:"h1,omitempty"`
	H6  *num `json:"h6,omitempty"`
	H24 *num `json:"h24,omitempty"`
}

type dsLiquidity struct {
	USD   num `json:"usd"`
	Base  num `json:"base"`
	Quote num `json:"quote"`
}

type dsInfo struct {
	ImageURL string      `json:"imageUrl,omitempty"`
	Websites []dsWebsite `json:"websites"`
	Socials  []dsSocial  `json:"socials"`
}

type dsWebsite struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

type dsSocial struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type dsBoosts struct {
	Active int `json:"active"`
}

// dsLatest is the /latest/dex/* envelope.
type dsLatest struct {
	SchemaVersion string   `json:"schemaVersion"`
	Pairs         []dsPair `json:"pairs"`
}

func changePtr(p *float64) *num {
	if p == nil {
		return nil
	}
	n := num(*p)
	return &n
}

func bs(t Txns) dsBuySell { return dsBuySell{Buys: t.Buys, Sells: t.Sells} }

// dexScreenerPairs renders every pair of m (all chains), as DexScreener does.
func dexScreenerPairs(m *Market) []dsPair {
	out := make([]dsPair, 0, len(m.Pairs))
	for i := range m.Pairs {
		out = append(out, dexScreenerPair(m, &m.Pairs[i]))
	}
	return out
}

func dexScreenerPair(m *Market, p *Pair) dsPair {
	base, quote := p.BaseQuote(m.Token)
	d := dsPair{
		ChainID:     p.ChainID(),
		DexID:       p.Dex,
		URL:         p.URL(),
		PairAddress: p.Address,
		Labels:      p.Labels,
		BaseToken:   dsToken(base),
		QuoteToken:  dsToken(quote),
		PriceNative: p.PriceNative,
		Txns:        dsTxns{M5: bs(p.Txns.M5), H1: bs(p.Txns.H1), H6: bs(p.Txns.H6), H24: bs(p.Txns.H24)},
		Volume:      dsVolume{M5: num(p.Volume.M5), H1: num(p.Volume.H1), H6: num(p.Volume.H6), H24: num(p.Volume.H24)},
		PriceChange: dsChange{M5: changePtr(p.PriceChange.M5), H1: changePtr(p.PriceChange.H1),
			H6: changePtr(p.PriceChange.H6), H24: changePtr(p.PriceChange.H24)},
	}
	switch {
	case p.PriceUSD != "":
		d.PriceUSD, _ = json.Marshal(p.PriceUSD)
	case p.PriceUSDNull:
		d.PriceUSD = json.RawMessage("null")
	}
	if p.Liquidity != nil {
		d.Liquidity = &dsLiquidity{USD: num(p.Liquidity.USD), Base: num(p.Liquidity.Base), Quote: num(p.Liquidity.Quote)}
	}
	if p.Side != Quote {
		d.FDV, d.MarketCap = numPtr(m.FDV), numPtr(m.MarketCap)
		if m.Info != nil {
			info := &dsInfo{ImageURL: m.Info.ImageURL, Websites: []dsWebsite{}, Socials: []dsSocial{}}
			for _, w := range m.Info.Websites {
				info.Websites = append(info.Websites, dsWebsite(w))
			}
			for _, s := range m.Info.Socials {
				info.Socials = append(info.Socials, dsSocial(s))
			}
			d.Info = info
		}
	}
	if !p.CreatedAt.IsZero() {
		d.CreatedAt = p.CreatedAt.UnixMilli()
	}
	if p.Boosts > 0 {
		d.Boosts = &dsBoosts{Active: p.Boosts}
	}
	return d
}

// GeckoTerminal JSON:API documents.

type gtDoc struct {
	Data []gtPool `json:"data"`
}

type gtPool struct {
	ID            string       `json:"id"`
	Type          string       `json:"type"`
	Attributes    gtAttributes `json:"attributes"`
	Relationships gtRelations  `json:"relationships"`
}

// gtAttributes follows the field order of the API's pool objects. Every
// amount is a decimal string; a missing value is null.
type gtAttributes struct {
	BaseTokenPriceUSD            *string        `json:"base_token_price_usd"`
	BaseTokenPriceNativeCurrency *string        `json:"base_token_price_native_currency"`
	QuoteTokenPriceUSD           *string        `json:"quote_token_price_usd"`
	QuoteTokenPriceNative        *string        `json:"quote_token_price_native_currency"`
	BaseTokenPriceQuoteToken     *string        `json:"base_token_price_quote_token"`
	QuoteTokenPriceBaseToken     *string        `json:"quote_token_price_base_token"`
	Address                      string         `json:"address"`
	Name                         string         `json:"name"`
	PoolCreatedAt                *string        `json:"pool_created_at"`
	TokenPriceUSD                *string        `json:"token_price_usd"`
	FDVUSD                       *string        `json:"fdv_usd"`
	MarketCapUSD                 *string        `json:"market_cap_usd"`
	PriceChangePercentage        gtChange       `json:"price_change_percentage"`
	Transactions                 gtTransactions `json:"transactions"`
	VolumeUSD                    gtVolume       `json:"volume_usd"`
	ReserveInUSD                 *string        `json:"reserve_in_usd"`
}

type gtChange struct {
	M5  *string `json:"m5,omitempty"`
	M15 *string `json:"m15,omitempty"`
	M30 *string `json:"m30,omitempty"`
	H1  *string `json:"h1,omitempty"`
	H6  *string `json:"h6,omitempty"`
	H24 *string `json:"h24,omitempty"`
}

type gtTxns struct {
	Buys    int `json:"buys"`
	Sells   int `json:"sells"`
	Buyers  int `json:"buyers"`
	Sellers int `json:"sellers"`
}

type gtTransactions struct {
	M5  gtTxns `json:"m5"`
	M15 gtTxns `json:"m15"`
	M30 gtTxns `json:"m30"`
	H1  gtTxns `json:"h1"`
	H6  gtTxns `json:"h6"`
	H24 gtTxns `json:"h24"`
}

type gtVolume struct {
	M5  string `json:"m5"`
	M15 string `json:"m15"`
	M30 string `json:"m30"`
	H1  string `json:"h1"`
	H6  string `json:"h6"`
	H24 string `json:"h24"`
}

type gtRelations struct {
	BaseToken  gtRel `json:"base_token"`
	QuoteToken gtRel `json:"quote_token"`
	Dex        gtRel `json:"dex"`
}

type gtRel struct {
	Data gtRef `json:"data"`
}

type gtRef struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

type gtErrors struct {
	Errors []gtError `json:"errors"`
}

type gtError struct {
	Status string `json:"status"`
	Title  string `json:"title"`
}

func strPtr(s string) *string { return &s }

func ratPtr(r *big.Rat, sig int) *string {
	if r == nil {
		return nil
	}
	return strPtr(sigText(r, sig))
}

func floatStr(f float64) string { return formatFloat(f) }

// gtPools renders the solana pairs of m as GeckoTerminal's token pools.
func gtPools(m *Market) []gtPool {
	out := []gtPool{}
	sol, ok := parseDec(m.SOLPriceUSD)
	if !ok || sol.Sign() <= 0 {
		sol = big.NewRat(150, 1)
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		if p.ChainID() != ChainSolana {
			continue
		}
		out = append(out, gtPoolOf(m, p, sol))
	}
	return out
}

func gtPoolOf(m *Market, p *Pair, sol *big.Rat) gtPool {
	base, quote := p.BaseQuote(m.Token)
	a := gtAttributes{
		Address: p.Address,
		Name:    base.Symbol + " / " + quote.Symbol,
	}
	native, okNative := parseDec(p.PriceNative)
	if okNative && native.Sign() > 0 {
		a.BaseTokenPriceQuoteToken = strPtr(p.PriceNative)
		a.QuoteTokenPriceBaseToken = ratPtr(new(big.Rat).Inv(native), 13)
	}
	if usd, ok := parseDec(p.PriceUSD); ok {
		a.BaseTokenPriceUSD = strPtr(p.PriceUSD)
		a.BaseTokenPriceNativeCurrency = ratPtr(new(big.Rat).Quo(usd, sol), 18)
		if okNative && native.Sign() > 0 {
			q := new(big.Rat).Quo(usd, native)
			a.QuoteTokenPriceUSD = ratPtr(q, 15)
			a.QuoteTokenPriceNative = ratPtr(new(big.Rat).Quo(q, sol), 18)
		}
	}
	if price, ok := p.TokenPriceUSD(); ok {
		a.TokenPriceUSD = strPtr(ratText(price))
	}
	if !p.CreatedAt.IsZero() {
		a.PoolCreatedAt = strPtr(p.CreatedAt.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	if p.Side != Quote {
		if m.FDV != 0 {
			a.FDVUSD = strPtr(floatStr(m.FDV))
		}
		if m.MarketCap != 0 {
			a.MarketCapUSD = strPtr(floatStr(m.MarketCap))
		}
	}
	a.PriceChangePercentage = gtChangeOf(p.PriceChange)
	a.Transactions = gtTransactions{
		M5: gtTx(p.Txns.M5), M15: gtTx(lerpTxns(p.Txns.M5, p.Txns.H1, 1, 4)), M30: gtTx(lerpTxns(p.Txns.M5, p.Txns.H1, 1, 2)),
		H1: gtTx(p.Txns.H1), H6: gtTx(p.Txns.H6), H24: gtTx(p.Txns.H24),
	}
	a.VolumeUSD = gtVolume{
		M5:  floatStr(p.Volume.M5),
		M15: floatStr(lerp(p.Volume.M5, p.Volume.H1, 0.25)),
		M30: floatStr(lerp(p.Volume.M5, p.Volume.H1, 0.5)),
		H1:  floatStr(p.Volume.H1), H6: floatStr(p.Volume.H6), H24: floatStr(p.Volume.H24),
	}
	if p.Liquidity != nil {
		a.ReserveInUSD = strPtr(floatStr(p.Liquidity.USD))
	}
	return gtPool{
		ID:         ChainSolana + "_" + p.Address,
		Type:       "pool",
		Attributes: a,
		Relationships: gtRelations{
			BaseToken:  gtRel{gtRef{ID: ChainSolana + "_" + base.Address, Type: "token"}},
			QuoteToken: gtRel{gtRef{ID: ChainSolana + "_" + quote.Address, Type: "token"}},
			Dex:        gtRel{gtRef{ID: p.Dex, Type: "dex"}},
		},
	}
}

func gtTx(t Txns) gtTxns {
	buyers, sellers := t.Buyers, t.Sellers
	if buyers == 0 && t.Buys > 0 {
		buyers = (t.Buys + 1) / 2
	}
	if sellers == 0 && t.Sells > 0 {
		sellers = (t.Sells + 1) / 2
	}
	return gtTxns{Buys: t.Buys, Sells: t.Sells, Buyers: buyers, Sellers: sellers}
}

func gtChangeOf(c PriceChange) gtChange {
	s := func(p *float64) *string {
		if p == nil {
			return nil
		}
		return strPtr(floatStr(*p))
	}
	out := gtChange{M5: s(c.M5), H1: s(c.H1), H6: s(c.H6), H24: s(c.H24)}
	if c.M5 != nil && c.H1 != nil {
		m15 := roundTo(lerp(*c.M5, *c.H1, 0.25), 3)
		m30 := roundTo(lerp(*c.M5, *c.H1, 0.5), 3)
		out.M15, out.M30 = s(&m15), s(&m30)
	}
	return out
}

// lerp interpolates the windows GeckoTerminal has and DexScreener lacks (m15,
// m30) between m5 and h1.
func lerp(a, b, t float64) float64 { return roundTo(a+(b-a)*t, 2) }

func lerpTxns(a, b Txns, num, den int) Txns {
	f := func(x, y int) int { return x + (y-x)*num/den }
	return Txns{Buys: f(a.Buys, b.Buys), Sells: f(a.Sells, b.Sells), Buyers: f(a.Buyers, b.Buyers), Sellers: f(a.Sellers, b.Sellers)}
}

func roundTo(f float64, decimals int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', decimals, 64), 64)
	return v
}
