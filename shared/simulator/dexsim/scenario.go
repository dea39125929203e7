package dexsim

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"time"
)

// Well-known Solana tokens used as the other side of generated pairs.
var (
	WrappedSOL = Token{Address: "So11111111111111111111111111111111111111112", Name: "Wrapped SOL", Symbol: "SOL"}
	USDC       = Token{Address: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", Name: "USD Coin", Symbol: "USDC"}
	USDT       = Token{Address: "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB", Name: "USDT", Symbol: "USDT"}
)

// Scenario returns a deterministic market for mint: the same mint and seed
// always give the same market. It holds, in an order shuffled by the seed:
//
//   - TOKEN/SOL (raydium, official) and TOKEN/USDC (orca, unofficial, a
//     smaller address) with equal, top usable liquidity: the official one
//     must be selected;
//   - SIDE/TOKEN (meteora): the token is the quote, its USD price is
//     priceUsd / priceNative (exactly the token's price);
//   - TOKEN/USDT (pumpswap) without a liquidity object;
//   - TOKEN/SOL (raydium CLMM) without priceUsd and with the highest
//     liquidity on solana: unusable, still counted in the totals;
//   - TOKEN/SOL (pumpswap, official) with less liquidity;
//   - a pair on chain "ethereum", with more liquidity than any other: it must
//     be ignored.
func Scenario(mint string, seed uint64) Market {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := gen{rng: rng}

	// The token's price: four significant digits, 1e-7 to 1e-2 (e.g.
	// 0.00001234).
	price := new(big.Rat).SetFrac64(int64(1000+rng.IntN(9000)), pow10(6+rng.IntN(5)))
	sol := new(big.Rat).SetFrac64(int64(12000+rng.IntN(10000)), 100) // 120.00 - 219.99
	usdc := new(big.Rat).SetFrac64(int64(9997+rng.IntN(7)), 10000)   // 0.9997 - 1.0003
	usdt := new(big.Rat).SetFrac64(int64(9995+rng.IntN(9)), 10000)
	side := Token{Address: g.address(), Name: "Side Coin", Symbol: "SIDE"}
	sidePrice := new(big.Rat).SetFrac64(int64(100+rng.IntN(900)), 10000) // 0.01 - 0.0999

	token := Token{Address: mint, Name: "Token Data Demo", Symbol: "TDD"}
	fdv, _ := new(big.Rat).Mul(price, big.NewRat(1_000_000_000, 1)).Float64()
	m := Market{
		Token:       token,
		SOLPriceUSD: ratText(sol),
		FDV:         fdv,
		MarketCap:   fdv,
		Info: &Info{
			ImageURL: "https://dd.dexscreener.com/ds-data/tokens/solana/" + mint + ".png",
			Websites: []Website{{Label: "Website", URL: "https://tokendata.example"}},
			Socials:  []Social{{Type: "twitter", URL: "https://x.com/tokendata"}, {Type: "telegram", URL: "https://t.me/tokendata"}},
		},
	}

	top := float64(50_000_00+rng.IntN(450_000_00)) / 100 // 50,000.00 - 499,999.99 USD

	official := g.pair(Base, WrappedSOL, "raydium", price, sol, top)
	official.Official = true
	official.Labels = []string{"CPMM"}
	rival := g.pair(Base, USDC, "orca", price, usdc, top)
	if rival.Address > official.Address { // the rival must win on address alone
		rival.Address, official.Address = official.Address, rival.Address
	}

	quoted := g.quotePair(side, "meteora", price, sidePrice, round2(top*0.3))
	quoted.Labels = []string{"DLMM"}

	noLiq := g.pair(Base, USDT, "pumpswap", price, usdt, 0)
	noLiq.Liquidity = nil
	h24 := round2(-3.7 + float64(rng.IntN(200))/10)
	noLiq.PriceChange = PriceChange{H24: &h24} // partial priceChange

	noUSD := g.pair(Base, WrappedSOL, "raydium", price, sol, round2(top*3))
	noUSD.PriceUSD = ""
	noUSD.Labels = []string{"CLMM"}
	noUSD.PriceChange.M5, noUSD.PriceChange.H6 = nil, nil

	second := g.pair(Base, WrappedSOL, "pumpswap", price, sol, round2(top*0.5))
	second.Official = true
	second.Boosts = 500

	foreign := g.pair(Base, Token{Address: "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", Name: "USD Coin", Symbol: "USDC"},
		"uniswap", price, usdc, round2(top*5))
	foreign.Chain = "ethereum"
	foreign.Address = "0x" + g.hex(40)

	m.Pairs = []Pair{official, rival, quoted, noLiq, noUSD, second, foreign}
	rng.Shuffle(len(m.Pairs), func(i, j int) { m.Pairs[i], m.Pairs[j] = m.Pairs[j], m.Pairs[i] })
	return m
}

type gen struct{ rng *rand.Rand }

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// pair makes a pair where the token is the base, quoted in other (USD price
// otherUSD), with liq USD of liquidity.
func (g gen) pair(side Side, other Token, dex string, price, otherUSD *big.Rat, liq float64) Pair {
	p := Pair{
		Address:     g.address(),
		Dex:         dex,
		Side:        side,
		Other:       other,
		PriceUSD:    ratText(price),
		PriceNative: sigText(new(big.Rat).Quo(price, otherUSD), 4),
		CreatedAt:   epoch.Add(time.Duration(g.rng.IntN(600*24)) * time.Hour).Add(time.Duration(g.rng.IntN(3600)) * time.Second),
	}
	g.activity(&p, liq)
	if liq > 0 {
		pf, _ := price.Float64()
		of, _ := otherUSD.Float64()
		p.Liquidity = &Liquidity{USD: liq, Base: math.Round(liq / 2 / pf), Quote: roundTo(liq/2/of, 3)}
	}
	return p
}

// quotePair makes a pair where the token is the quote: base is other (USD
// price otherUSD). priceNative is rounded; priceUsd is then price ×
// priceNative exactly, so priceUsd / priceNative is exactly the token's price.
func (g gen) quotePair(other Token, dex string, price, otherUSD *big.Rat, liq float64) Pair {
	native, _ := new(big.Rat).SetString(sigText(new(big.Rat).Quo(otherUSD, price), 6))
	p := Pair{
		Address:     g.address(),
		Dex:         dex,
		Side:        Quote,
		Other:       other,
		PriceUSD:    ratText(new(big.Rat).Mul(price, native)),
		PriceNative: ratText(native),
		CreatedAt:   epoch.Add(time.Duration(g.rng.IntN(600*24)) * time.Hour),
	}
	g.activity(&p, liq)
	pf, _ := price.Float64()
	of, _ := otherUSD.Float64()
	p.Liquidity = &Liquidity{USD: liq, Base: roundTo(liq/2/of, 2), Quote: math.Round(liq / 2 / pf)}
	return p
}

// activity fills volumes, trade counts and price changes, growing with the
// window and roughly with liquidity.
func (g gen) activity(p *Pair, liq float64) {
	scale := liq
	if scale == 0 {
		scale = 5000
	}
	v24 := round2(scale * (0.2 + g.rng.Float64()*2))
	v6 := round2(v24 * (0.2 + g.rng.Float64()*0.3))
	v1 := round2(v6 * (0.1 + g.rng.Float64()*0.2))
	v5 := round2(v1 * g.rng.Float64() * 0.1)
	p.Volume = Volumes{M5: v5, H1: v1, H6: v6, H24: v24}
	n24 := 50 + g.rng.IntN(5000)
	n6 := n24 * (20 + g.rng.IntN(30)) / 100
	n1 := n6 * (10 + g.rng.IntN(20)) / 100
	n5 := n1 * g.rng.IntN(10) / 100
	p.Txns = TxnWindows{M5: g.txns(n5), H1: g.txns(n1), H6: g.txns(n6), H24: g.txns(n24)}
	ch := func(spread int) *float64 {
		v := float64(g.rng.IntN(2*spread+1)-spread) / 100
		return &v
	}
	p.PriceChange = PriceChange{M5: ch(100), H1: ch(500), H6: ch(1500), H24: ch(4000)}
}

func (g gen) txns(n int) Txns {
	buys := n * (40 + g.rng.IntN(21)) / 100
	t := Txns{Buys: buys, Sells: n - buys}
	t.Buyers = t.Buys * (50 + g.rng.IntN(40)) / 100
	t.Sellers = t.Sells * (50 + g.rng.IntN(40)) / 100
	return t
}

// address is a random 32-byte public key in base58.
func (g gen) address() string {
	var b [32]byte
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	return base58(b[:])
}

func (g gen) hex(n int) string {
	const digits = "0123456789abcdef"
	out := make([]byte, n)
	for i := range out {
		out[i] = digits[g.rng.IntN(16)]
	}
	return string(out)
}

const b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func base58(b []byte) string {
	x := new(big.Int).SetBytes(b)
	mod, base := new(big.Int), big.NewInt(58)
	var out []byte
	for x.Sign() > 0 {
		x.DivMod(x, base, mod)
		out = append(out, b58[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func round2(f float64) float64 { return roundTo(f, 2) }

// Reprice moves the token's USD price to price (a decimal string) on every
// pair, keeping each pair's other token at its USD price: base pairs get the
// new priceUsd and a rescaled priceNative; quote pairs a rescaled priceNative
// and priceUsd = price × priceNative, so the quote rule stays exact. Pairs
// without priceUsd keep it absent. It reports false if price is not a
// positive decimal.
func (m *Market) Reprice(price string) bool {
	np, ok := parseDec(price)
	if !ok || np.Sign() <= 0 {
		return false
	}
	before := m.Truth()
	for i := range m.Pairs {
		p := &m.Pairs[i]
		native, okN := parseDec(p.PriceNative)
		if !okN || native.Sign() <= 0 {
			continue
		}
		old, okOld := p.TokenPriceUSD()
		if !okOld && before.HasSelected {
			old, okOld = before.PriceUSD, true
		}
		if !okOld {
			continue
		}
		if p.Side == Quote {
			// other token in our tokens: scales by old/new.
			n, _ := new(big.Rat).SetString(sigText(new(big.Rat).Mul(native, new(big.Rat).Quo(old, np)), 6))
			p.PriceNative = ratText(n)
			if p.PriceUSD != "" {
				p.PriceUSD = ratText(new(big.Rat).Mul(np, n))
			}
			continue
		}
		p.PriceNative = sigText(new(big.Rat).Mul(native, new(big.Rat).Quo(np, old)), 4)
		if p.PriceUSD != "" {
			p.PriceUSD = ratText(np)
		}
	}
	if f, _ := np.Float64(); m.FDV != 0 {
		m.FDV = roundTo(f*1_000_000_000, 2)
		m.MarketCap = m.FDV
	}
	return true
}

// Drift moves the token's price of mint by a deterministic random walk
// (at most maxPct percent per step, four significant digits) every interval,
// until ctx is done. It blocks: run it in a goroutine (demo mode).
func (s *Server) Drift(ctx context.Context, mint string, seed uint64, interval time.Duration, maxPct float64) {
	rng := rand.New(rand.NewPCG(seed, ^seed))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := s.Truth(mint)
		if !t.HasSelected {
			continue
		}
		step := (rng.Float64()*2 - 1) * maxPct / 100
		f := new(big.Rat).Mul(t.PriceUSD, new(big.Rat).SetFloat64(1+step))
		s.Reprice(mint, sigText(f, 4))
	}
}
