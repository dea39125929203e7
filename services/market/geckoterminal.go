package market

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// gtNetwork is GeckoTerminal's network id of Solana; ids of tokens and
// pools are prefixed with it and an underscore.
const gtNetwork = "solana"

// GeckoTerminal's token pools answer (GET /networks/{network}/tokens/
// {token}/pools?include=base_token,quote_token): a JSON:API document whose
// data holds pools and whose included holds their tokens. Every amount is a
// decimal string; a missing one is null.
type gtDoc struct {
	Data     []gtPool     `json:"data"`
	Included []gtIncluded `json:"included"`
}

type gtPool struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		BaseTokenPriceUSD        num       `json:"base_token_price_usd"`
		BaseTokenPriceQuoteToken num       `json:"base_token_price_quote_token"`
		Address                  string    `json:"address"`
		Name                     string    `json:"name"`
		PoolCreatedAt            *string   `json:"pool_created_at"`
		PriceChangePercentage    dsWindows `json:"price_change_percentage"`
		Transactions             struct {
			M5  dsBuySell `json:"m5"`
			H1  dsBuySell `json:"h1"`
			H6  dsBuySell `json:"h6"`
			H24 dsBuySell `json:"h24"`
		} `json:"transactions"`
		VolumeUSD    dsWindows `json:"volume_usd"`
		ReserveInUSD num       `json:"reserve_in_usd"`
	} `json:"attributes"`
	Relationships struct {
		BaseToken  gtRel `json:"base_token"`
		QuoteToken gtRel `json:"quote_token"`
		Dex        gtRel `json:"dex"`
	} `json:"relationships"`
}

type gtRel struct {
	Data *struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"data"`
}

func (r gtRel) id() string {
	if r.Data == nil {
		return ""
	}
	return r.Data.ID
}

type gtIncluded struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Attributes struct {
		Address string `json:"address"`
		Name    string `json:"name"`
		Symbol  string `json:"symbol"`
	} `json:"attributes"`
}

// parseGeckoTerminal decodes a token pools body into pairs with the same
// meaning as DexScreener's: reserve_in_usd is the liquidity,
// base_token_price_usd the base token's USD price and
// base_token_price_quote_token its price in quote tokens (priceNative).
// Token symbols and names come from included, or else from the pool name
// ("BASE / QUOTE"). No pool gives no pair.
func parseGeckoTerminal(body []byte) ([]wirePair, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, fmt.Errorf("answer is not a JSON:API document")
	}
	var doc gtDoc
	if err := decodeStrict(body, &doc); err != nil {
		return nil, fmt.Errorf("%s", jsonError(err))
	}
	tokens := map[string]contract.TokenRef{}
	for _, inc := range doc.Included {
		if inc.Type == "token" && inc.ID != "" {
			a := inc.Attributes
			if a.Address == "" {
				a.Address = stripNetwork(inc.ID)
			}
			tokens[inc.ID] = contract.TokenRef{Address: a.Address, Name: a.Name, Symbol: a.Symbol}
		}
	}
	out := make([]wirePair, 0, len(doc.Data))
	for i := range doc.Data {
		p, err := doc.Data[i].toWire(tokens)
		if err != nil {
			return nil, fmt.Errorf("pool %d (%s): %w", i, clip(doc.Data[i].ID), err)
		}
		validatePair(&p)
		out = append(out, p)
	}
	return out, nil
}

func (g *gtPool) toWire(tokens map[string]contract.TokenRef) (wirePair, error) {
	a := &g.Attributes
	addr := a.Address
	if addr == "" {
		addr = stripNetwork(g.ID)
	}
	if addr == "" {
		return wirePair{}, fmt.Errorf("attributes.address: missing")
	}
	baseSym, quoteSym := splitPoolName(a.Name)
	ref := func(rel gtRel, symbol string) contract.TokenRef {
		if t, ok := tokens[rel.id()]; ok {
			return t
		}
		return contract.TokenRef{Address: stripNetwork(rel.id()), Symbol: symbol}
	}
	p := wirePair{
		Chain:   gtNetwork,
		Address: addr,
		Dex:     g.Relationships.Dex.id(),
		URL:     "https://www.geckoterminal.com/" + gtNetwork + "/pools/" + addr,
		Base:    ref(g.Relationships.BaseToken, baseSym),
		Quote:   ref(g.Relationships.QuoteToken, quoteSym),
	}
	var err error
	if p.PriceUSD, err = parseDecimal("base_token_price_usd", a.BaseTokenPriceUSD, false); err != nil {
		return p, err
	}
	if p.PriceNative, err = parseDecimal("base_token_price_quote_token", a.BaseTokenPriceQuoteToken, false); err != nil {
		return p, err
	}
	if p.LiquidityUSD, err = parseDecimal("reserve_in_usd", a.ReserveInUSD, false); err != nil {
		return p, err
	}
	if p.Volume, err = volumes("volume_usd", a.VolumeUSD); err != nil {
		return p, err
	}
	if p.Change, err = changes("price_change_percentage", a.PriceChangePercentage); err != nil {
		return p, err
	}
	tx := &a.Transactions
	for _, w := range []struct {
		name string
		in   dsBuySell
		out  *contract.Txns
	}{{"m5", tx.M5, &p.Txns.M5}, {"h1", tx.H1, &p.Txns.H1}, {"h6", tx.H6, &p.Txns.H6}, {"h24", tx.H24, &p.Txns.H24}} {
		if w.out.Buys, err = parseCount("transactions."+w.name+".buys", w.in.Buys); err != nil {
			return p, err
		}
		if w.out.Sells, err = parseCount("transactions."+w.name+".sells", w.in.Sells); err != nil {
			return p, err
		}
	}
	if a.PoolCreatedAt != nil && *a.PoolCreatedAt != "" {
		t, err := time.Parse(time.RFC3339, *a.PoolCreatedAt)
		if err != nil {
			return p, fmt.Errorf("pool_created_at: %s is not an RFC 3339 time", clip(*a.PoolCreatedAt))
		}
		t = t.UTC()
		p.CreatedAt = &t
	}
	return p, nil
}

// stripNetwork turns a GeckoTerminal id ("solana_<address>") into the
// address; ids of another network give "".
func stripNetwork(id string) string {
	addr, ok := strings.CutPrefix(id, gtNetwork+"_")
	if !ok {
		return ""
	}
	return addr
}

// splitPoolName reads the symbols of a pool name "BASE / QUOTE" (a fee
// tier such as "QUOTE 0.25%" is dropped).
func splitPoolName(name string) (base, quote string) {
	b, q, ok := strings.Cut(name, " / ")
	if !ok {
		return "", ""
	}
	if f := strings.Fields(q); len(f) > 0 {
		q = f[0]
	}
	return strings.TrimSpace(b), q
}
