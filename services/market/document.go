package market

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// Reasons a detected pair is not usable (contract.Pair.Reason). Pairs with
// ReasonOtherChain, ReasonInvalidAddress, ReasonAmountOutOfRange or
// ReasonTokenNotInPair are not kept: they are listed for diagnosis only
// and count in no total.
const (
	// ReasonOtherChain: the pair is not on chain solana.
	ReasonOtherChain = "other_chain"
	// ReasonInvalidAddress: the pair's address, or its base or quote
	// token's, is not a base58 text of 32 bytes; it is published as "".
	ReasonInvalidAddress = "invalid_address"
	// ReasonAmountOutOfRange: the pair's liquidity or a volume is at or
	// above maxAmountUSD, or a trade count above maxCount.
	ReasonAmountOutOfRange = "amount_out_of_range"
	// ReasonTokenNotInPair: the token is neither the base nor the quote.
	ReasonTokenNotInPair = "token_not_in_pair"
	// ReasonNoPriceUSD: the aggregator gave no priceUsd.
	ReasonNoPriceUSD = "no_price_usd"
	// ReasonNoPriceNative: the token is the quote and the aggregator gave
	// no positive priceNative to divide by.
	ReasonNoPriceNative = "no_price_native"
	// ReasonPriceNotPositive: the implied USD price is zero.
	ReasonPriceNotPositive = "price_not_positive"
	// ReasonPriceOutOfRange: the implied USD price is above maxPriceUSD.
	ReasonPriceOutOfRange = "price_out_of_range"
)

// Warning codes of the market document.
const (
	WarnOfficialPairMissing     = "official_pair_missing"
	WarnSelectedPairNotOfficial = "selected_pair_not_official"
	WarnPriceMoved              = "price_moved"
	WarnFallbackSource          = "fallback_source"
	// WarnUpstreamDataCleaned: text or a price change of the aggregator
	// was cut or dropped (validatePair).
	WarnUpstreamDataCleaned = "upstream_data_cleaned"
)

// Rule is the selection rule, stated in every document.
const Rule = "Pairs on chain solana where the token is the base or the quote token are kept, " +
	"unless an address is not a 32-byte base58 key, the liquidity or a volume reaches 1e15 USD, or a trade count exceeds 1e12. " +
	"A pair's USD price for the token is priceUsd when the token is the base, and priceUsd / priceNative when it is the quote; " +
	"a pair is usable when that price is present, positive and at most 1e12 USD. " +
	"The selected pair is the usable pair with the highest liquidity.usd (absent counts as 0); " +
	"ties go to an official pair, then to the smaller address. " +
	"Liquidity, volume and transactions sum every kept pair."

// buildInput is what a document is built from besides the pairs.
type buildInput struct {
	Mint string
	// Official lists the official pair addresses in token-file order.
	Official []string
	// Prev is the previous good document, if any (price move warning).
	Prev *contract.Market
	// MoveShare is the price move (0.5 = 50 %) that is flagged.
	MoveShare decimal.Decimal
	// Fallback names the primary upstream that failed, when the pairs come
	// from the fallback source.
	Fallback string
}

// candidate is a kept pair with what selection needs.
type candidate struct {
	pair  *contract.Pair
	wire  *wirePair
	liq   decimal.Decimal
	price decimal.Decimal
}

// buildMarket applies the contract's market rules to the detected pairs.
func buildMarket(pairs []wirePair, in buildInput) (contract.Market, error) {
	official := make(map[string]bool, len(in.Official))
	for _, a := range in.Official {
		official[a] = true
	}
	m := contract.Market{
		Status:   contract.MarketNotIndexed,
		Official: make([]contract.OfficialPair, 0, len(in.Official)),
		Rule:     Rule,
		Warnings: []contract.Warning{},
	}
	var kept []bool
	m.Pairs, kept = detectPairs(pairs, in.Mint, official)

	// Totals over kept pairs, then selection among the usable ones.
	if cands := addTotals(&m, pairs, kept); len(cands) > 0 {
		selectPair(&m, cands)
	}

	m.Pairs = sortPairs(m.Pairs, kept)

	// Official pairs and warnings.
	addOfficial(&m, in.Official)
	addWarnings(&m, pairs, in)
	return m, checkDocument(m)
}

// detectPairs lists every detected pair as the document shows it, the
// kept ones with their side and price (pricePair), the others with the
// reason they are not kept; kept says which are kept.
func detectPairs(pairs []wirePair, mint string, official map[string]bool) (_ []contract.Pair, kept []bool) {
	out := make([]contract.Pair, 0, len(pairs))
	kept = make([]bool, 0, len(pairs))
	for i := range pairs {
		w := &pairs[i]
		p := contract.Pair{
			Address: w.Address, DexID: w.Dex, URL: w.URL, Base: w.Base, Quote: w.Quote,
			LiquidityUSD: w.LiquidityUSD, VolumeUSD24h: w.Volume.H24, CreatedAt: w.CreatedAt,
			Labels: w.Labels, Official: official[w.Address],
		}
		if p.Labels == nil {
			p.Labels = []string{}
		}
		switch {
		case w.Chain != gtNetwork:
			p.Reason = ReasonOtherChain
		case w.Reject != "":
			p.Reason = w.Reject
		case w.Base.Address == mint:
			p.Side = contract.SideBase
		case w.Quote.Address == mint:
			p.Side = contract.SideQuote
		default:
			p.Reason = ReasonTokenNotInPair
		}
		if p.Side != "" {
			pricePair(&p, w)
		}
		out = append(out, p)
		kept = append(kept, p.Side != "")
	}
	return out, kept
}

// addTotals adds the liquidity, volumes and transactions of the kept
// pairs to m (m.Pairs[i] is pairs[i]), whose status is no_usable_pair
// when one is kept, and returns the usable pairs.
func addTotals(m *contract.Market, pairs []wirePair, kept []bool) []candidate {
	var cands []candidate
	for i := range m.Pairs {
		if !kept[i] {
			continue
		}
		w := &pairs[i]
		if w.LiquidityUSD != nil {
			m.LiquidityUSD = m.LiquidityUSD.Add(*w.LiquidityUSD)
		}
		m.VolumeUSD.M5 = m.VolumeUSD.M5.Add(w.Volume.M5)
		m.VolumeUSD.H1 = m.VolumeUSD.H1.Add(w.Volume.H1)
		m.VolumeUSD.H6 = m.VolumeUSD.H6.Add(w.Volume.H6)
		m.VolumeUSD.H24 = m.VolumeUSD.H24.Add(w.Volume.H24)
		addTxns(&m.Txns.M5, w.Txns.M5)
		addTxns(&m.Txns.H1, w.Txns.H1)
		addTxns(&m.Txns.H6, w.Txns.H6)
		addTxns(&m.Txns.H24, w.Txns.H24)
		m.Status = contract.MarketNoUsablePair
		if p := &m.Pairs[i]; p.Usable {
			c := candidate{pair: p, wire: w, price: *p.PriceUSD}
			if w.LiquidityUSD != nil {
				c.liq = *w.LiquidityUSD
			}
			cands = append(cands, c)
		}
	}
	return cands
}

// selectPair selects the usable pair with the highest liquidity (ties:
// an official pair, then the smaller address) and makes m's price its.
func selectPair(m *contract.Market, cands []candidate) {
	best := slices.MinFunc(cands, func(a, b candidate) int {
		if c := b.liq.Cmp(a.liq); c != 0 {
			return c // higher liquidity first
		}
		if a.pair.Official != b.pair.Official {
			if a.pair.Official {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.pair.Address, b.pair.Address)
	})
	m.Status = contract.MarketOK
	m.PriceUSD, m.PriceQuote = best.pair.PriceUSD, best.pair.PriceQuote
	m.PriceBasis = priceBasis(best.pair.Side, best.wire)
	m.QuoteSymbol = best.pair.Quote.Symbol
	if best.pair.Side == contract.SideQuote {
		m.QuoteSymbol = best.pair.Base.Symbol
	}
	// The aggregators' price change is the base token's. Where the
	// token is the quote it says nothing of the token's USD price, so
	// it is left out rather than mislabelled.
	if best.pair.Side == contract.SideBase {
		m.PriceChange = best.wire.Change
	}
	sel := *best.pair
	m.Selected = &sel
}

// sortPairs returns the pairs in a stable order: kept pairs by liquidity
// (absent last), then address; pairs that are not kept after them.
func sortPairs(pairs []contract.Pair, kept []bool) []contract.Pair {
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if kept[a] != kept[b] {
			if kept[a] {
				return -1
			}
			return 1
		}
		la, lb := pairs[a].LiquidityUSD, pairs[b].LiquidityUSD
		switch {
		case la != nil && lb == nil:
			return -1
		case la == nil && lb != nil:
			return 1
		case la != nil && lb != nil:
			if c := lb.Cmp(*la); c != 0 {
				return c
			}
		}
		return cmp.Compare(pairs[a].Address, pairs[b].Address)
	})
	sorted := make([]contract.Pair, len(order))
	for i, j := range order {
		sorted[i] = pairs[j]
	}
	return sorted
}

// addOfficial lists the official pairs in m, whether each is kept and
// selected, with a warning for each one the aggregator does not list.
func addOfficial(m *contract.Market, official []string) {
	for _, addr := range official {
		op := contract.OfficialPair{Address: addr}
		for i := range m.Pairs {
			if p := &m.Pairs[i]; p.Address == addr && p.Side != "" {
				op.Found, op.LiquidityUSD = true, p.LiquidityUSD
				op.Selected = m.Selected != nil && m.Selected.Address == addr
			}
		}
		m.Official = append(m.Official, op)
		if !op.Found {
			m.Warnings = append(m.Warnings, contract.Warning{Code: WarnOfficialPairMissing,
				Message: fmt.Sprintf("Official pair %s is not listed by the aggregator for this token.", addr)})
		}
	}
}

// addWarnings adds m's other warnings: a selected pair that is not
// official, a price move since the previous document, the fallback
// source, and upstream data cleaned.
func addWarnings(m *contract.Market, pairs []wirePair, in buildInput) {
	if m.Selected != nil && len(in.Official) > 0 && !m.Selected.Official {
		m.Warnings = append(m.Warnings, contract.Warning{Code: WarnSelectedPairNotOfficial,
			Message: fmt.Sprintf("The price comes from pair %s (%s), which is not an official pair: it has the most liquidity.", m.Selected.Address, m.Selected.DexID)})
	}
	if w, ok := priceMove(in.Prev, m.PriceUSD, in.MoveShare); ok {
		m.Warnings = append(m.Warnings, w)
	}
	if in.Fallback != "" {
		m.Warnings = append(m.Warnings, contract.Warning{Code: WarnFallbackSource,
			Message: fmt.Sprintf("%s failed; these figures come from the fallback aggregator.", in.Fallback)})
	}
	if w, ok := cleanedWarning(pairs); ok {
		m.Warnings = append(m.Warnings, w)
	}
}

// priceBasis is the basis of a usable pair's price (pricePair): its
// priceUsd, and its priceNative where the token is the quote.
func priceBasis(side string, w *wirePair) *contract.PriceBasis {
	if side == contract.SideBase {
		return contract.NewPriceBasis(*w.PriceUSD, nil)
	}
	return contract.NewPriceBasis(*w.PriceUSD, w.PriceNative)
}

// pricePair sets the token's USD price and price in the other token of a
// kept pair, or the reason it is not usable.
func pricePair(p *contract.Pair, w *wirePair) {
	native := w.PriceNative
	if native != nil && native.Sign() <= 0 {
		native = nil
	}
	if p.Side == contract.SideBase {
		p.PriceQuote = native
		switch {
		case w.PriceUSD == nil:
			p.Reason = ReasonNoPriceUSD
		case w.PriceUSD.Sign() <= 0:
			p.Reason = ReasonPriceNotPositive
		case w.PriceUSD.GreaterThan(maxPriceUSD):
			p.Reason = ReasonPriceOutOfRange
		default:
			p.PriceUSD, p.Usable = w.PriceUSD, true
		}
		return
	}
	// The token is the quote: priceUsd is the base token's USD price and
	// priceNative the base token's price in our token. Each quotient is
	// published to the significant digits of its least precise input
	// (1 is exact), as precise as the aggregator's figures make it
	// (docs/decisions.md, Bodies).
	if native != nil {
		inv := amount.Quotient(decimal.NewFromInt(1), *native, amount.Significant(*native))
		p.PriceQuote = &inv
	}
	switch {
	case w.PriceUSD == nil:
		p.Reason = ReasonNoPriceUSD
	case native == nil:
		p.Reason = ReasonNoPriceNative
	case w.PriceUSD.Sign() <= 0:
		p.Reason = ReasonPriceNotPositive
	default:
		q := contract.NewPriceBasis(*w.PriceUSD, native).Price()
		switch {
		case q.Sign() <= 0:
			p.Reason = ReasonPriceNotPositive
		case q.GreaterThan(maxPriceUSD):
			p.Reason = ReasonPriceOutOfRange
		default:
			p.PriceUSD, p.Usable = &q, true
		}
	}
}

func addTxns(dst *contract.Txns, v contract.Txns) {
	dst.Buys += v.Buys
	dst.Sells += v.Sells
}

// priceMove reports a warning when price moved by more than share of the
// previous good document's price.
func priceMove(prev *contract.Market, price *decimal.Decimal, share decimal.Decimal) (contract.Warning, bool) {
	if prev == nil || prev.Status != contract.MarketOK || prev.PriceUSD == nil || prev.PriceUSD.Sign() <= 0 || price == nil {
		return contract.Warning{}, false
	}
	old := *prev.PriceUSD
	move := price.Sub(old).Abs().DivRound(old, 12)
	if move.Cmp(share) <= 0 {
		return contract.Warning{}, false
	}
	pct := move.Mul(decimal.NewFromInt(100)).Round(2)
	dir := "rose"
	if price.LessThan(old) {
		dir = "fell"
	}
	return contract.Warning{Code: WarnPriceMoved,
		Message: fmt.Sprintf("The price %s %s%% since the previous poll (%s to %s USD), more than the %s%% this token flags.",
			dir, pct.String(), old.String(), price.String(), share.Mul(decimal.NewFromInt(100)).String())}, true
}

// checkDocument refuses a document that would publish a negative figure
// or contradict its status. (Decimals cannot hold NaN or infinities, and
// the parsers reject them.)
func checkDocument(m contract.Market) error {
	var errs []error
	neg := func(field string, d *decimal.Decimal) {
		if d != nil && d.Sign() < 0 {
			errs = append(errs, fmt.Errorf("%s is negative", field))
		}
	}
	neg("price_usd", m.PriceUSD)
	neg("price_quote", m.PriceQuote)
	neg("liquidity_usd", &m.LiquidityUSD)
	windows := []string{"m5", "h1", "h6", "h24"}
	vols := []decimal.Decimal{m.VolumeUSD.M5, m.VolumeUSD.H1, m.VolumeUSD.H6, m.VolumeUSD.H24}
	txns := []contract.Txns{m.Txns.M5, m.Txns.H1, m.Txns.H6, m.Txns.H24}
	for i, name := range windows {
		neg("volume_usd."+name, &vols[i])
		if txns[i].Buys < 0 || txns[i].Sells < 0 {
			errs = append(errs, fmt.Errorf("txns.%s is negative (a sum overflowed)", name))
		}
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		neg(fmt.Sprintf("pairs[%d].price_usd", i), p.PriceUSD)
		neg(fmt.Sprintf("pairs[%d].price_quote", i), p.PriceQuote)
		neg(fmt.Sprintf("pairs[%d].liquidity_usd", i), p.LiquidityUSD)
		neg(fmt.Sprintf("pairs[%d].volume_usd_24h", i), &p.VolumeUSD24h)
	}
	switch m.Status {
	case contract.MarketOK:
		if m.PriceUSD == nil || m.PriceUSD.Sign() <= 0 || m.Selected == nil {
			errs = append(errs, errors.New("status ok without a positive price and a selected pair"))
		}
	case contract.MarketNotIndexed, contract.MarketNoUsablePair:
		if m.PriceUSD != nil || m.Selected != nil {
			errs = append(errs, fmt.Errorf("status %s with a price", m.Status))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown status %q", m.Status))
	}
	return errors.Join(errs...)
}
