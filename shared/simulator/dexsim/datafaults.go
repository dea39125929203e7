package dexsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// Data faults. With one of the data kinds of package fault injected, the
// token-pairs and token-pools routes answer the market as usual and append
// the pairs DataFaultPairs lists, with the wire edits described there. The
// hostile pairs that would win selection on liquidity get the highest
// liquidity of the answer, so that a collector that trusts them publishes
// them.
const (
	// HostilePairAddress is the pair address of the first HostileHTML pair.
	HostilePairAddress = `<script>alert(1)</script>`
	// HostileTokenAddress is the other token's address of the second
	// HostileHTML pair.
	HostileTokenAddress = `"><img src=x onerror=alert(1)>`
	// HostileName and HostileSymbol name the other token of the third
	// HostileHTML pair, whose addresses are valid.
	HostileName   = `<img src=x onerror=alert(1)>`
	HostileSymbol = `<b>X</b>`
	// HugeNameBytes is the size of the other token's name in the
	// HostileHuge pair (the name is "Huge " and CJK runes of 3 bytes).
	HugeNameBytes = 3 << 20
	// HostilePriceUSD is the priceUsd of the first HostileNumbers pair.
	HostilePriceUSD = "9e39"
	// OddPriceUSD is the priceUsd of the first RealWorldOdd pair: about
	// 1.2e-15 USD with 68 significant digits, as live aggregators send.
	OddPriceUSD = "0.00000000000000123456789012345678901234567890123456789012345678901234567"
	// OddTinyPriceUSD is the priceUsd of the second RealWorldOdd pair.
	OddTinyPriceUSD = "0.000000000000001"
)

// invalidUTF8 stands for two bytes that are not UTF-8 (0xff 0xfe) in a
// HostileControl name; it is replaced in the encoded body, as encoding/json
// cannot write invalid UTF-8.
const invalidUTF8 = "\u2063INVALID-UTF8\u2063"

// extraPair is a pair a data fault appends, with its wire edits.
type extraPair struct {
	Pair
	// self, when set, replaces the market token's name and symbol in this
	// pair (the aggregators show per-pair token metadata).
	self *Token
	ds   func(obj map[string]any) // edits of the DexScreener pair object
	gt   func(obj map[string]any) // edits of the GeckoTerminal pool object
}

// DataFaultPairs lists the pairs data fault kind appends to the answers of
// market m, in served order (nil for any other kind):
//
//   - fault.HostileHTML: a pair whose address is HostilePairAddress and one
//     whose other token's address is HostileTokenAddress, both with the top
//     liquidity; then one with valid addresses and markup in its other
//     token's name and symbol, its dex id, its label and its link
//     ("javascript:"), with a liquidity of 1.
//   - fault.HostileHuge: a pair with the top liquidity whose other token has
//     a name of HugeNameBytes and a 64 KiB symbol, with a 100-byte dex id, a
//     1000-byte label and a 631-byte link.
//   - fault.HostileControl: a pair with the top liquidity whose other token
//     is named "Evil\u202egnp.exe" with symbol "US\x00DC", its dex id and label
//     holding BEL and ESC; and one (liquidity 2) with invalid UTF-8 in the
//     name and a C1 control in the symbol.
//   - fault.HostileNumbers: a pair with the top liquidity and priceUsd
//     HostilePriceUSD; one with 9e20 USD of liquidity and of 24 h volume;
//     one with 2^63-1 buys in 24 h; one where the token is the quote, with
//     priceUsd 1000 and priceNative 1e-10 (an implied price of 1e13 USD).
//   - fault.RealWorldOdd: honest pairs that must stay usable. The first
//     (top liquidity) has priceUsd OddPriceUSD, names with spaces around
//     them, an unknown label, an "Https://" link, an image URL with a query
//     string and unknown fields in several objects; the second liquidity 0
//     and priceUsd OddTinyPriceUSD; the third no liquidity object.
//
// The top liquidity is ten times the market's highest plus one million USD.
func DataFaultPairs(kind fault.Kind, m Market) []Pair {
	extras := dataFaultPairs(kind, &m)
	out := make([]Pair, 0, len(extras))
	for _, e := range extras {
		out = append(out, e.clone())
	}
	return out
}

func dataFaultPairs(kind fault.Kind, m *Market) []extraPair {
	top := topLiquidity(m)
	switch kind {
	case fault.HostileHTML:
		a := newExtraPair("html pair", otherToken("html other a", "Evil", "EVL"), "1", top)
		a.Address = HostilePairAddress
		b := newExtraPair("html token", Token{Address: HostileTokenAddress, Name: "Evil", Symbol: "EVL"}, "1", top)
		c := newExtraPair("html text", otherToken("html other c", HostileName, HostileSymbol), "1", 1)
		c.Dex = `<i>raydium</i>`
		c.Labels = []string{`<svg/onload=alert(1)>`}
		c.ds = setURL("javascript:alert(document.domain)")
		return []extraPair{a, b, c}
	case fault.HostileHuge:
		h := newExtraPair("huge", otherToken("huge other", "Huge "+strings.Repeat("名", (HugeNameBytes-5)/3), strings.Repeat("S", 64<<10)), "1", top)
		h.Dex = strings.Repeat("d", 100)
		h.Labels = []string{strings.Repeat("L", 1000)}
		h.ds = setURL("https://dexscreener.com/solana/" + strings.Repeat("x", 600))
		return []extraPair{h}
	case fault.HostileControl:
		c := newExtraPair("control", otherToken("control other", "Evil\u202egnp.exe", "US\x00DC"), "1", top)
		c.Dex = "raydium\a"
		c.Labels = []string{"CL\x1bMM"}
		d := newExtraPair("control utf8", otherToken("control other utf8", "Bad"+invalidUTF8+"Bytes", "C1\u009bX"), "1", 2)
		return []extraPair{c, d}
	case fault.HostileNumbers:
		price := newExtraPair("numbers price", otherToken("numbers other price", "Big Price", "BIGP"), HostilePriceUSD, top)
		amounts := newExtraPair("numbers amounts", otherToken("numbers other amounts", "Big Pool", "BIGL"), "0.001", 9e20)
		amounts.Volume.H24 = 9e20
		counts := newExtraPair("numbers counts", otherToken("numbers other counts", "Busy Pool", "BUSY"), "0.001", 3)
		counts.Txns.H24 = Txns{Buys: math.MaxInt64, Sells: 1, Buyers: 1, Sellers: 1}
		quote := newExtraPair("numbers quote", otherToken("numbers other quote", "Dear Base", "DEAR"), "1000", 4)
		quote.Side = Quote
		quote.PriceNative = "0.0000000001"
		return []extraPair{price, amounts, counts, quote}
	case fault.RealWorldOdd:
		return realWorldOddPairs(m, top)
	}
	return nil
}

// topLiquidity is the liquidity of the hostile pairs that would win
// selection: ten times the market's highest on solana plus one million
// USD (one million at least).
func topLiquidity(m *Market) float64 {
	top := 1_000_000.0
	for _, p := range m.Pairs {
		if p.Liquidity != nil && p.ChainID() == ChainSolana {
			top = max(top, p.Liquidity.USD*10+1_000_000)
		}
	}
	return top
}

// otherToken is the other token of an extra pair, its address named by
// label.
func otherToken(label, name, symbol string) Token {
	return Token{Address: fakeAddress(label), Name: name, Symbol: symbol}
}

// newExtraPair is a plain raydium pair of the token as the base, with o,
// its address named by label, that data faults edit.
func newExtraPair(label string, o Token, priceUSD string, liq float64) extraPair {
	one := Txns{Buys: 3, Sells: 2}
	return extraPair{Pair: Pair{
		Address: fakeAddress(label), Dex: "raydium", Side: Base, Other: o,
		PriceUSD: priceUSD, PriceNative: "0.5",
		Liquidity: &Liquidity{USD: liq, Base: 1000, Quote: 500},
		Volume:    Volumes{M5: 1, H1: 2, H6: 3, H24: 4},
		Txns:      TxnWindows{M5: one, H1: one, H6: one, H24: one},
		CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	}}
}

// setURL is a wire edit that sets the pair object's url.
func setURL(u string) func(map[string]any) {
	return func(obj map[string]any) { obj["url"] = u }
}

// realWorldOddPairs are the pairs of fault.RealWorldOdd (DataFaultPairs),
// the first with liquidity top.
func realWorldOddPairs(m *Market, top float64) []extraPair {
	self := Token{Address: m.Token.Address, Name: m.Token.Name + "  ", Symbol: " " + m.Token.Symbol}
	usdc := USDC
	usdc.Name = " " + usdc.Name + " "
	precise := newExtraPair("odd precise", usdc, OddPriceUSD, top)
	precise.self = &self
	precise.PriceNative = OddPriceUSD
	precise.Labels = []string{"DYN2"}
	precise.ds = func(obj map[string]any) {
		obj["url"] = "Https://dexscreener.com/solana/" + strings.ToLower(precise.Address)
		obj["info"] = map[string]any{
			"imageUrl":  "https://dd.dexscreener.com/ds-data/tokens/solana/" + m.Token.Address + ".png?key=ab12cd&size=lg",
			"header":    "https://dd.dexscreener.com/ds-data/tokens/solana/" + m.Token.Address + "/header.png?key=ab12cd",
			"openGraph": "https://cdn.dexscreener.com/token-images/og/solana/" + m.Token.Address + "?timestamp=1740830400000",
			"websites":  []any{map[string]any{"label": "Website", "url": "HTTPS://tokendata.example/?ref=dexscreener"}},
			"socials":   []any{map[string]any{"type": "twitter", "url": "https://x.com/tokendata"}},
		}
		obj["newFieldObject"] = map[string]any{"nested": []any{1, "two", nil}}
		obj["marketCapRank"] = json.Number("12")
		edit(obj, "baseToken", func(t map[string]any) { t["decimals"] = json.Number("9") })
		edit(obj, "liquidity", func(l map[string]any) { l["lpLockedPercent"] = json.Number("12.5") })
		edit(obj, "volume", func(v map[string]any) { v["m15"] = json.Number("0.25") })
		edit(obj, "txns", func(t map[string]any) {
			edit(t, "h24", func(w map[string]any) { w["buyers"] = json.Number("2") })
		})
	}
	precise.gt = func(obj map[string]any) {
		edit(obj, "attributes", func(a map[string]any) {
			a["locked_liquidity_percentage"] = "12.5"
			a["pool_fee_percentage"] = nil
			a["new_field"] = map[string]any{"x": []any{1}}
		})
		edit(obj, "relationships", func(r map[string]any) {
			r["network"] = map[string]any{"data": map[string]any{"id": "solana", "type": "network"}}
		})
		obj["links"] = map[string]any{"self": "Https://www.geckoterminal.com/solana/pools/" + precise.Address + "?utm_source=api"}
	}
	zero := newExtraPair("odd zero liquidity", WrappedSOL, OddTinyPriceUSD, 0)
	zero.PriceNative = "0.00000000000000000667"
	absent := newExtraPair("odd no liquidity", USDT, "0.0000000000000012", 0)
	absent.Liquidity = nil
	absent.PriceNative = "0.0000000000000012"
	return []extraPair{precise, zero, absent}
}

// edit runs fn on obj[key] when it is an object.
func edit(obj map[string]any, key string, fn func(map[string]any)) {
	if v, ok := obj[key].(map[string]any); ok {
		fn(v)
	}
}

// fakeAddress is a valid, deterministic 32-byte address named by label.
func fakeAddress(label string) string {
	sum := sha256.Sum256([]byte("dexsim data fault " + label))
	return base58(sum[:])
}

// dataFault returns the data fault injected for r, if any.
func dataFault(r *http.Request) (fault.Kind, bool) {
	f, ok := fault.FromContext(r.Context())
	if !ok {
		return "", false
	}
	switch f.Kind {
	case fault.HostileHTML, fault.HostileHuge, fault.HostileControl, fault.HostileNumbers, fault.RealWorldOdd:
		return f.Kind, true
	}
	return "", false
}

// market is m, with its token's name and symbol replaced by e.self when
// set.
func (e *extraPair) market(m *Market) *Market {
	if e.self == nil {
		return m
	}
	c := *m
	c.Token = *e.self
	return &c
}

// object is v encoded and decoded again as a JSON object, numbers kept as
// written.
func object(v any) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(mustJSON(v)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		panic(err) // the simulator's own types always round-trip
	}
	return obj
}

// dexScreenerWithFault renders m's pairs, then the pairs of data fault kind.
func dexScreenerWithFault(m *Market, kind fault.Kind) []any {
	out := []any{}
	for _, p := range dexScreenerPairs(m) {
		out = append(out, p)
	}
	for _, e := range dataFaultPairs(kind, m) {
		obj := object(dexScreenerPair(e.market(m), &e.Pair))
		if e.ds != nil {
			e.ds(obj)
		}
		out = append(out, obj)
	}
	return out
}

// gtDocWithFault is m's pools, then the pools of data fault kind, with
// their tokens in included.
func gtDocWithFault(m *Market, kind fault.Kind) map[string]any {
	sol, ok := parseDec(m.SOLPriceUSD)
	if !ok || sol.Sign() <= 0 {
		sol = big.NewRat(150, 1)
	}
	data := []any{}
	for _, p := range gtPools(m) {
		data = append(data, p)
	}
	included := []any{}
	for _, e := range dataFaultPairs(kind, m) {
		mm := e.market(m)
		obj := object(gtPoolOf(mm, &e.Pair, sol))
		if e.gt != nil {
			e.gt(obj)
		}
		data = append(data, obj)
		base, quote := e.BaseQuote(mm.Token)
		for _, t := range []Token{base, quote} {
			included = append(included, map[string]any{
				"id": ChainSolana + "_" + t.Address, "type": "token",
				"attributes": map[string]any{"address": t.Address, "name": t.Name, "symbol": t.Symbol},
			})
		}
	}
	return map[string]any{"data": data, "included": included}
}

// rawFaultBytes writes what encoding/json cannot: invalid UTF-8.
func rawFaultBytes(body []byte) []byte {
	return bytes.ReplaceAll(body, []byte(invalidUTF8), []byte{0xff, 0xfe})
}
