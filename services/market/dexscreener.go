package market

import (
	"bytes"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
)

// DexScreener's token-pairs answer (GET /token-pairs/v1/{chainId}/{token}):
// a bare array of pair objects, or null. Fields this collector does not use
// (fdv, marketCap, info, boosts) are not decoded.
type dsPair struct {
	ChainID     string   `json:"chainId"`
	DexID       string   `json:"dexId"`
	URL         string   `json:"url"`
	PairAddress string   `json:"pairAddress"`
	Labels      []string `json:"labels"`
	BaseToken   dsToken  `json:"baseToken"`
	QuoteToken  dsToken  `json:"quoteToken"`
	PriceNative num      `json:"priceNative"`
	PriceUSD    num      `json:"priceUsd"`
	Txns        struct {
		M5  dsBuySell `json:"m5"`
		H1  dsBuySell `json:"h1"`
		H6  dsBuySell `json:"h6"`
		H24 dsBuySell `json:"h24"`
	} `json:"txns"`
	Volume        dsWindows    `json:"volume"`
	PriceChange   dsWindows    `json:"priceChange"`
	Liquidity     *dsLiquidity `json:"liquidity"`
	PairCreatedAt num          `json:"pairCreatedAt"`
}

type dsToken struct {
	Address string `json:"address"`
	Name    string `json:"name"`
	Symbol  string `json:"symbol"`
}

func (t dsToken) ref() contract.TokenRef {
	return contract.TokenRef{Address: t.Address, Symbol: t.Symbol, Name: t.Name}
}

type dsBuySell struct {
	Buys  num `json:"buys"`
	Sells num `json:"sells"`
}

type dsWindows struct {
	M5  num `json:"m5"`
	H1  num `json:"h1"`
	H6  num `json:"h6"`
	H24 num `json:"h24"`
}

type dsLiquidity struct {
	USD num `json:"usd"`
}

// parseDexScreener decodes a token-pairs body. An empty list or null gives
// no pair ("not indexed"); anything malformed, a missing pair address, a
// number that is not a decimal, or a negative price, liquidity, volume or
// count is an error naming the pair and the field.
func parseDexScreener(body []byte) ([]wirePair, error) {
	body = bytes.TrimSpace(body)
	if string(body) == "null" {
		return nil, nil
	}
	if len(body) == 0 || body[0] != '[' {
		return nil, fmt.Errorf("answer is not a JSON array of pairs")
	}
	var raw []dsPair
	if err := decodeStrict(body, &raw); err != nil {
		return nil, fmt.Errorf("%s", jsonError(err))
	}
	out := make([]wirePair, 0, len(raw))
	for i := range raw {
		p, err := raw[i].toWire()
		if err != nil {
			return nil, fmt.Errorf("pair %d (%s): %w", i, clip(raw[i].PairAddress), err)
		}
		validatePair(&p)
		out = append(out, p)
	}
	return out, nil
}

func (d *dsPair) toWire() (wirePair, error) {
	if d.PairAddress == "" {
		return wirePair{}, fmt.Errorf("pairAddress: missing")
	}
	if d.ChainID == "" {
		return wirePair{}, fmt.Errorf("chainId: missing")
	}
	p := wirePair{
		Chain:   d.ChainID,
		Address: d.PairAddress,
		Dex:     d.DexID,
		URL:     d.URL,
		Base:    d.BaseToken.ref(),
		Quote:   d.QuoteToken.ref(),
		Labels:  d.Labels,
	}
	var err error
	if p.PriceUSD, err = parseDecimal("priceUsd", d.PriceUSD, false); err != nil {
		return p, err
	}
	if p.PriceNative, err = parseDecimal("priceNative", d.PriceNative, false); err != nil {
		return p, err
	}
	if d.Liquidity != nil {
		if p.LiquidityUSD, err = parseDecimal("liquidity.usd", d.Liquidity.USD, false); err != nil {
			return p, err
		}
	}
	if p.Volume, err = volumes("volume", d.Volume); err != nil {
		return p, err
	}
	if p.Change, err = changes("priceChange", d.PriceChange); err != nil {
		return p, err
	}
	for _, w := range []struct {
		name string
		in   dsBuySell
		out  *contract.Txns
	}{{"m5", d.Txns.M5, &p.Txns.M5}, {"h1", d.Txns.H1, &p.Txns.H1}, {"h6", d.Txns.H6, &p.Txns.H6}, {"h24", d.Txns.H24, &p.Txns.H24}} {
		if w.out.Buys, err = parseCount("txns."+w.name+".buys", w.in.Buys); err != nil {
			return p, err
		}
		if w.out.Sells, err = parseCount("txns."+w.name+".sells", w.in.Sells); err != nil {
			return p, err
		}
	}
	ms, err := parseCount("pairCreatedAt", d.PairCreatedAt)
	if err != nil {
		return p, err
	}
	if ms > 0 {
		t := time.UnixMilli(ms).UTC()
		p.CreatedAt = &t
	}
	return p, nil
}

// volumes parses one non-negative decimal per window (absent: 0).
func volumes(field string, w dsWindows) (contract.Windows[decimal.Decimal], error) {
	var out contract.Windows[decimal.Decimal]
	for _, x := range []struct {
		name string
		in   num
		out  *decimal.Decimal
	}{{"m5", w.M5, &out.M5}, {"h1", w.H1, &out.H1}, {"h6", w.H6, &out.H6}, {"h24", w.H24, &out.H24}} {
		d, err := parseDecimal(field+"."+x.name, x.in, false)
		if err != nil {
			return out, err
		}
		if d != nil {
			*x.out = *d
		}
	}
	return out, nil
}

// changes parses one signed decimal per window (absent: nil).
func changes(field string, w dsWindows) (contract.Windows[*decimal.Decimal], error) {
	var out contract.Windows[*decimal.Decimal]
	var err error
	for _, x := range []struct {
		name string
		in   num
		out  **decimal.Decimal
	}{{"m5", w.M5, &out.M5}, {"h1", w.H1, &out.H1}, {"h6", w.H6, &out.H6}, {"h24", w.H24, &out.H24}} {
		if *x.out, err = parseDecimal(field+"."+x.name, x.in, true); err != nil {
			return out, err
		}
	}
	return out, nil
}
