package market

import (
	"context"
	"fmt"
	"strings"

	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Serves are the endpoints the market collector decides.
const Serves = "/api/price, /api/market, /api/market-data, /api/market-pairs"

// maxPaste bounds the pairs suggested as official_pairs.
const maxPaste = 10

// Probe builds the collector as serving does (its MARKET_ variables, the
// common configuration, the token) and checks it (Check) into the market
// group of r, and sets r's paste block to the official_pairs YAML.
func Probe(ctx context.Context, common config.Common, token config.Token, r *check.Report) {
	g := r.Group("market", Serves)
	cfg, err := LoadConfig()
	if err != nil {
		g.Fail("MARKET_ variables", err.Error(), "fix the variable the error names (docs/environment.md)")
		return
	}
	col, err := New(common, token, cfg, collector.CheckDeps(token.Mint))
	if err != nil {
		g.Fail("configuration", err.Error(), "fix the variable or the token file's key the error names")
		return
	}
	r.Paste = col.Check(ctx, g)
}

// Check reads DexScreener and GeckoTerminal once each, as the poll reads
// them (the same requests, parsers and market rules), and adds the
// verdicts to g: the pairs each lists, the pair serving would select,
// the token file's official pairs found or not. It returns the usable
// pairs as ready-to-paste official_pairs YAML ("" when there are none).
// It writes nothing.
func (c *Collector) Check(ctx context.Context, g *check.Group) (paste string) {
	in := buildInput{Mint: c.mint, Official: c.official, MoveShare: c.moveShare}
	ds, dsErr := c.fromDexScreener(ctx, in)
	gt, gtErr := c.fromGeckoTerminal(ctx, in)

	served := &ds
	switch {
	case dsErr != nil && (gtErr != nil || c.cfg.DisableFallback):
		collector.CheckFail(g, "DexScreener", dsErr)
		served = nil
	case dsErr != nil:
		g.Warn("DexScreener", fmt.Sprintf("%s: %s", collector.Classify(dsErr).Kind, collector.Classify(dsErr).Message),
			collector.Classify(dsErr).Remedy+"; meanwhile the price comes from the fallback, GeckoTerminal")
		served = &gt
	case ds.Status == contract.MarketNotIndexed:
		g.Fail("DexScreener", "lists no pair of the token on chain solana: /api/price answers 503 no_market",
			"check the mint address; a token without a pool has no price: create a pool on a DEX, "+
				"then wait until DexScreener indexes it (the fallback is used only when DexScreener fails, not when it lists nothing)")
		served = nil
	case ds.Status == contract.MarketNoUsablePair:
		g.Fail("DexScreener", describe(ds)+"; none has a positive USD price: /api/price answers 503 no_market",
			"wait for trades that give the pairs a USD price; /api/market-pairs lists each pair and why it is not usable")
		served = nil
	default:
		g.OK("DexScreener", "%s; would select %s", describe(ds), pairText(ds.Selected))
	}
	switch {
	case gtErr != nil:
		ce := collector.Classify(gtErr)
		if dsErr == nil {
			g.Warn("GeckoTerminal (fallback)", fmt.Sprintf("%s: %s", ce.Kind, ce.Message),
				"the fallback would not serve if DexScreener failed; "+ce.Remedy)
		}
	case gt.Status == contract.MarketOK:
		g.OK("GeckoTerminal (fallback)", "%s; would select %s", describe(gt), pairText(gt.Selected))
	default:
		g.Warn("GeckoTerminal (fallback)", describe(gt)+"; none usable", "the fallback would not serve if DexScreener failed")
	}
	if served == nil {
		return pasteOf(ds, gt, dsErr, gtErr)
	}
	for _, o := range served.Official {
		switch {
		case !o.Found:
			g.Fail("official pair "+o.Address, "declared in the token file's official_pairs, not listed by the aggregator for this token",
				"correct its address in official_pairs (the pairs listed below are what the aggregator knows), or remove it")
		case o.Selected:
			g.OK("official pair "+o.Address, "listed, and the one serving would select")
		default:
			g.Warn("official pair "+o.Address, "listed, but not the most liquid usable pair: the price comes from another one, "+
				"and /api/market-pairs says so ("+WarnSelectedPairNotOfficial+")",
				"nothing to change if that is right; the selection rule is the liquidity")
		}
	}
	if len(served.Official) == 0 {
		g.OK("official_pairs", "the token file declares none: the most liquid usable pair is selected (the YAML below lists the candidates)")
	}
	for _, w := range served.Warnings {
		switch w.Code {
		case WarnOfficialPairMissing, WarnSelectedPairNotOfficial:
			continue // said above
		}
		g.Warn("warning "+w.Code, w.Message, "disclosed on /api/market-pairs")
	}
	return pasteOf(ds, gt, dsErr, gtErr)
}

// describe counts the pairs of a document.
func describe(m contract.Market) string {
	var kept, usable int
	for _, p := range m.Pairs {
		if p.Side != "" {
			kept++
		}
		if p.Usable {
			usable++
		}
	}
	return fmt.Sprintf("%d pairs listed, %d of the token on solana, %d usable", len(m.Pairs), kept, usable)
}

// pairText names a pair for the report.
func pairText(p *contract.Pair) string {
	if p == nil {
		return "none"
	}
	s := fmt.Sprintf("%s (%s %s/%s", p.Address, p.DexID, p.Base.Symbol, p.Quote.Symbol)
	if p.LiquidityUSD != nil {
		s += ", liquidity $" + p.LiquidityUSD.StringFixed(2)
	}
	return s + ")"
}

// pasteOf renders the usable pairs of the aggregator that would serve as
// official_pairs YAML, the selected one first.
func pasteOf(ds, gt contract.Market, dsErr, gtErr error) string {
	m, from := ds, "DexScreener"
	if dsErr != nil || ds.Status != contract.MarketOK {
		if gtErr != nil || gt.Status != contract.MarketOK {
			return ""
		}
		m, from = gt, "GeckoTerminal"
	}
	var pairs []contract.Pair
	if m.Selected != nil {
		pairs = append(pairs, *m.Selected)
	}
	for _, p := range m.Pairs {
		if p.Usable && (m.Selected == nil || p.Address != m.Selected.Address) {
			pairs = append(pairs, p)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The usable pairs %s lists, most liquid first; keep those the project declares official,\n", from)
	b.WriteString("# and paste them into the token file (docs/token-file.md, official_pairs):\n")
	b.WriteString("official_pairs:\n")
	for i, p := range pairs {
		if i == maxPaste {
			fmt.Fprintf(&b, "  # … and %d more usable pairs (/api/market-pairs lists them all)\n", len(pairs)-maxPaste)
			break
		}
		note := "liquidity unknown"
		if p.LiquidityUSD != nil {
			note = "liquidity $" + p.LiquidityUSD.StringFixed(2)
		}
		if i == 0 && m.Selected != nil {
			note = "selected; " + note
		}
		fmt.Fprintf(&b, "  - {address: %s, dex: %s, base: %s, quote: %s}  # %s\n",
			p.Address, yamlScalar(p.DexID), yamlScalar(p.Base.Symbol), yamlScalar(p.Quote.Symbol), note)
	}
	return b.String()
}

// plainRune reports whether r may appear in a plain YAML scalar as we
// write them: ASCII letters, digits, '-', '_' and '.'.
func plainRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// yamlScalar quotes a value from an aggregator when plain YAML would not
// read it back as the same string.
func yamlScalar(s string) string {
	plain := s != ""
	for _, r := range s {
		if !plainRune(r) {
			plain = false
		}
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		plain = false
	}
	if plain {
		return s
	}
	return fmt.Sprintf("%q", s)
}
