package dexsim

import (
	"math/big"
	"slices"
	"strings"
	"time"
)

// ChainSolana is the DexScreener chain id (and GeckoTerminal network id) the
// collector keeps.
const ChainSolana = "solana"

// Side says where the market's token sits in a pair.
type Side string

const (
	Base  Side = "base"  // the token is the pair's base token
	Quote Side = "quote" // the token is the pair's quote token
)

// Token identifies a token as both aggregators show it.
type Token struct {
	Address string
	Name    string
	Symbol  string
}

// Market is every pair of one token: the single source both APIs are
// rendered from. Prices are decimal strings served exactly as written.
type Market struct {
	// Token is the market's own token (the mint).
	Token Token
	// SOLPriceUSD is the USD price of the network's native currency, used for
	// GeckoTerminal's *_native_currency fields. Empty means "150".
	SOLPriceUSD string
	// FDV and MarketCap are what the aggregator reports for the token on the
	// pairs where it is the base (0: absent / null).
	FDV, MarketCap float64
	// Info is the token profile DexScreener attaches to pairs where the token
	// is the base (nil: absent).
	Info  *Info
	Pairs []Pair
}

// Info is DexScreener's pair "info" object.
type Info struct {
	ImageURL string
	Websites []Website
	Socials  []Social
}

// Website is one entry of info.websites.
type Website struct{ Label, URL string }

// Social is one entry of info.socials.
type Social struct{ Type, URL string }

// Liquidity is DexScreener's liquidity object: USD value and the amounts of
// base and quote token in the pool.
type Liquidity struct{ USD, Base, Quote float64 }

// Txns counts one window's trades. Buyers and Sellers (unique wallets) only
// appear on GeckoTerminal.
type Txns struct{ Buys, Sells, Buyers, Sellers int }

// Volumes are USD volumes per window.
type Volumes struct{ M5, H1, H6, H24 float64 }

// TxnWindows are trade counts per window.
type TxnWindows struct{ M5, H1, H6, H24 Txns }

// PriceChange is the price change in percent per window; a nil window is
// absent from the wire (DexScreener sends partial objects).
type PriceChange struct{ M5, H1, H6, H24 *float64 }

// Pair is one pool of the market's token.
type Pair struct {
	// Chain is the DexScreener chainId; empty means ChainSolana. Pairs on
	// another chain are served by DexScreener only and must be ignored.
	Chain string
	// Address is the pool address (pairAddress).
	Address string
	// Dex is the dexId ("raydium", "orca", "meteora", "pumpswap", ...).
	Dex string
	// Side says whether the market's token is the base or the quote.
	Side Side
	// Other is the pair's other token.
	Other Token
	// PriceUSD is the USD price of the pair's base token (priceUsd). Empty
	// means DexScreener has none: the field is absent (or null, see
	// PriceUSDNull) and GeckoTerminal's USD prices are null.
	PriceUSD string
	// PriceUSDNull renders an absent PriceUSD as "priceUsd": null instead of
	// leaving the field out.
	PriceUSDNull bool
	// PriceNative is the price of the base token in quote tokens.
	PriceNative string
	// Liquidity is nil when the aggregator has none (field absent).
	Liquidity   *Liquidity
	Volume      Volumes
	Txns        TxnWindows
	PriceChange PriceChange
	CreatedAt   time.Time
	// Labels (e.g. "CLMM", "DLMM"); nil leaves the field out.
	Labels []string
	// Official marks the pairs the token's issuer discloses (the token
	// config's official pairs); it is not on the wire.
	Official bool
	// Boosts is DexScreener's boosts.active; 0 leaves the field out.
	Boosts int
}

// ChainID is the pair's chain, ChainSolana when unset.
func (p Pair) ChainID() string {
	if p.Chain == "" {
		return ChainSolana
	}
	return p.Chain
}

// BaseQuote returns the pair's base and quote tokens.
func (p Pair) BaseQuote(token Token) (base, quote Token) {
	if p.Side == Quote {
		return p.Other, token
	}
	return token, p.Other
}

// URL is the pair's DexScreener page.
func (p Pair) URL() string {
	return "https://dexscreener.com/" + p.ChainID() + "/" + strings.ToLower(p.Address)
}

// TokenPriceUSD is the USD price of the market's token implied by this pair
// under the contract's rule (priceUsd when it is the base, priceUsd /
// priceNative when it is the quote), and whether the pair is usable (a price
// present and positive).
func (p Pair) TokenPriceUSD() (*big.Rat, bool) {
	usd, ok := parseDec(p.PriceUSD)
	if !ok || usd.Sign() <= 0 {
		return nil, false
	}
	if p.Side != Quote {
		return usd, true
	}
	native, ok := parseDec(p.PriceNative)
	if !ok || native.Sign() <= 0 {
		return nil, false
	}
	return new(big.Rat).Quo(usd, native), true
}

// OfficialPairs lists the addresses of the official pairs, as the token
// config would carry them.
func (m Market) OfficialPairs() []string {
	var out []string
	for _, p := range m.Pairs {
		if p.Official {
			out = append(out, p.Address)
		}
	}
	return out
}

// Clone returns a deep copy of m.
func (m Market) Clone() Market {
	out := m
	if m.Info != nil {
		info := *m.Info
		info.Websites = slices.Clone(m.Info.Websites)
		info.Socials = slices.Clone(m.Info.Socials)
		out.Info = &info
	}
	out.Pairs = make([]Pair, len(m.Pairs))
	for i, p := range m.Pairs {
		out.Pairs[i] = p.clone()
	}
	return out
}

func (p Pair) clone() Pair {
	if p.Liquidity != nil {
		l := *p.Liquidity
		p.Liquidity = &l
	}
	p.Labels = slices.Clone(p.Labels)
	p.PriceChange = PriceChange{M5: clonePtr(p.PriceChange.M5), H1: clonePtr(p.PriceChange.H1),
		H6: clonePtr(p.PriceChange.H6), H24: clonePtr(p.PriceChange.H24)}
	return p
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// Truth is what a correct market collector derives from the market under the
// market rules of services/market/README.md.
type Truth struct {
	Mint string
	// Indexed is false when no pair is kept: the aggregator "does not index"
	// the token (an empty list), which is not an outage.
	Indexed bool
	// Kept are the pairs on chain solana with the mint as base or quote, in
	// served order; Ignored are the others (another chain).
	Kept, Ignored []string
	// Usable are the kept pairs with a price present and positive.
	Usable []string
	// Selected is the usable pair with the highest liquidity.usd (absent
	// counts as 0); ties go to an official pair, then to the smaller address.
	// HasSelected is false when no pair is usable (the edge's no_market).
	Selected    Pair
	HasSelected bool
	// PriceUSD is the token's USD price from the selected pair, exact.
	PriceUSD *big.Rat
	// PriceUSDText is PriceUSD in plain decimal notation: exact when the
	// decimal expansion terminates, else rounded to 20 decimal places.
	PriceUSDText string
	// PairPriceUSD is the token's USD price implied by each usable pair.
	PairPriceUSD map[string]string
	// Totals sum every kept pair (usable or not).
	Totals Totals
}

// Totals sums kept pairs. Sums are computed exactly from the served decimal
// literals, then rounded to the nearest float64.
type Totals struct {
	Pairs        int
	LiquidityUSD float64
	Volume       Volumes
	Txns         TxnWindows // Buys and Sells only
}

// Truth computes the ground truth of m.
func (m Market) Truth() Truth {
	t := Truth{Mint: m.Token.Address, PairPriceUSD: map[string]string{}}
	var liq big.Rat
	var vol [4]big.Rat
	var best *Pair
	var bestLiq float64
	for i := range m.Pairs {
		p := &m.Pairs[i]
		if p.ChainID() != ChainSolana {
			t.Ignored = append(t.Ignored, p.Address)
			continue
		}
		t.Kept = append(t.Kept, p.Address)
		t.Totals.Pairs++
		l := 0.0
		if p.Liquidity != nil {
			l = p.Liquidity.USD
			liq.Add(&liq, floatRat(l))
		}
		for w, v := range []float64{p.Volume.M5, p.Volume.H1, p.Volume.H6, p.Volume.H24} {
			vol[w].Add(&vol[w], floatRat(v))
		}
		addTxns(&t.Totals.Txns.M5, p.Txns.M5)
		addTxns(&t.Totals.Txns.H1, p.Txns.H1)
		addTxns(&t.Totals.Txns.H6, p.Txns.H6)
		addTxns(&t.Totals.Txns.H24, p.Txns.H24)

		price, ok := p.TokenPriceUSD()
		if !ok {
			continue
		}
		t.Usable = append(t.Usable, p.Address)
		t.PairPriceUSD[p.Address] = ratText(price)
		if best == nil || better(p, l, best, bestLiq) {
			best, bestLiq = p, l
		}
	}
	t.Indexed = len(t.Kept) > 0
	t.Totals.LiquidityUSD, _ = liq.Float64()
	t.Totals.Volume.M5, _ = vol[0].Float64()
	t.Totals.Volume.H1, _ = vol[1].Float64()
	t.Totals.Volume.H6, _ = vol[2].Float64()
	t.Totals.Volume.H24, _ = vol[3].Float64()
	if best != nil {
		t.Selected = best.clone()
		t.HasSelected = true
		t.PriceUSD, _ = best.TokenPriceUSD()
		t.PriceUSDText = ratText(t.PriceUSD)
	}
	return t
}

// better reports whether pair a (liquidity la) beats pair b (liquidity lb).
func better(a *Pair, la float64, b *Pair, lb float64) bool {
	if la != lb {
		return la > lb
	}
	if a.Official != b.Official {
		return a.Official
	}
	return a.Address < b.Address
}

func addTxns(dst *Txns, v Txns) {
	dst.Buys += v.Buys
	dst.Sells += v.Sells
}

// floatRat is the exact value of f's shortest decimal representation, which
// is the literal the wire carries.
func floatRat(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(formatFloat(f))
	return r
}

func parseDec(s string) (*big.Rat, bool) {
	if s == "" {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// ratText formats r in plain decimal notation: exact when its expansion
// terminates, else rounded to 20 decimal places; trailing zeros trimmed.
func ratText(r *big.Rat) string {
	n, exact := r.FloatPrec()
	if !exact || n > 40 {
		n = 20
	}
	return trimZeros(r.FloatString(n))
}

// sigText formats r in plain decimal notation rounded to sig significant
// digits (never fewer than the integer digits).
func sigText(r *big.Rat, sig int) string {
	if r.Sign() == 0 {
		return "0"
	}
	if _, exact := r.FloatPrec(); exact {
		// Keep exact short values as they are.
		if s := ratText(r); significantDigits(s) <= sig {
			return s
		}
	}
	abs := new(big.Rat).Abs(r)
	// e is the power of ten of the leading digit.
	e := 0
	ten := big.NewRat(10, 1)
	one := big.NewRat(1, 1)
	x := new(big.Rat).Set(abs)
	for x.Cmp(ten) >= 0 {
		x.Quo(x, ten)
		e++
	}
	for x.Cmp(one) < 0 {
		x.Mul(x, ten)
		e--
	}
	decimals := sig - 1 - e
	if decimals < 0 {
		decimals = 0
	}
	return trimZeros(r.FloatString(decimals))
}

func significantDigits(s string) int {
	s = strings.TrimLeft(strings.Replace(strings.TrimPrefix(s, "-"), ".", "", 1), "0")
	return len(s)
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
