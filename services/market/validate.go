package market

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mr-tron/base58"
	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/contract"
)

// What the collector accepts from an aggregator before anything is stored.
// README.md states the same rules for operators.

// Caps of published text, in bytes.
const (
	maxNameBytes   = 64  // a token name; longer is cut at a rune boundary
	maxSymbolBytes = 16  // a token symbol; longer is cut at a rune boundary
	maxDexBytes    = 32  // a dex id; longer is dropped
	maxLabelBytes  = 32  // one label; longer is dropped
	maxLabels      = 8   // labels of one pair; more are dropped
	maxURLBytes    = 512 // a link; longer is dropped
	maxOtherIDLen  = 128 // an address on another chain; longer is dropped
)

// Bounds of the figures of one pair. Each is far beyond any real market
// and far below what a sum of a few thousand pairs could overflow.
var (
	// maxPriceUSD: a token's USD price above it makes the pair unusable
	// (ReasonPriceOutOfRange).
	maxPriceUSD = decimal.New(1, 12)
	// minPriceNative and maxPriceNative: a priceNative outside them counts
	// as absent.
	minPriceNative = decimal.New(1, -30)
	maxPriceNative = decimal.New(1, 30)
	// maxAmountUSD: a liquidity or volume at or above it leaves the pair
	// out of every total (ReasonAmountOutOfRange).
	maxAmountUSD = decimal.New(1, 15)
	// maxChangePct: a price change (percent) at or beyond ±maxChangePct
	// counts as absent.
	maxChangePct = decimal.New(1, 9)
)

// maxCount bounds one trade count; above it the pair is left out of every
// total (ReasonAmountOutOfRange).
const maxCount = 1_000_000_000_000

// validatePair checks and cleans a decoded pair in place. Text is cleaned
// (see cleanText, cleanID, cleanURL) with a note per value cut or dropped;
// a pair on solana with an address that is not a key, or with a figure out
// of range, gets p.Reject.
func validatePair(p *wirePair) {
	note := func(format string, a ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, a...)) }

	addrs := []struct {
		field string
		v     *string
	}{{"address", &p.Address}, {"base.address", &p.Base.Address}, {"quote.address", &p.Quote.Address}}
	for _, a := range addrs {
		if p.Chain == gtNetwork {
			if !isKey(*a.v) {
				*a.v, p.Reject = "", ReasonInvalidAddress
			}
		} else if !isPlainID(*a.v, maxOtherIDLen) {
			*a.v = ""
		}
	}
	if p.Address == "" {
		p.URL = "" // built from, or naming, an address that is not published
	}

	for _, t := range []struct {
		side string
		ref  *contract.TokenRef
	}{{"base", &p.Base}, {"quote", &p.Quote}} {
		var why string
		if t.ref.Name, why = cleanText(t.ref.Name, maxNameBytes); why != "" {
			note("%s.name %s", t.side, why)
		}
		if t.ref.Symbol, why = cleanText(t.ref.Symbol, maxSymbolBytes); why != "" {
			note("%s.symbol %s", t.side, why)
		}
	}
	var why string
	if p.Dex, why = cleanID(p.Dex, maxDexBytes); why != "" {
		note("dex %s", why)
	}
	if p.URL, why = cleanURL(p.URL); why != "" {
		note("url %s", why)
	}
	labels := make([]string, 0, min(len(p.Labels), maxLabels))
	for i, l := range p.Labels {
		if i == maxLabels {
			note("labels after the first %d dropped", maxLabels)
			break
		}
		if l, why = cleanID(l, maxLabelBytes); why != "" {
			note("label %s", why)
			continue
		}
		labels = append(labels, l)
	}
	if p.Labels != nil {
		p.Labels = labels
	}

	if p.PriceNative != nil && p.PriceNative.Sign() > 0 && (p.PriceNative.LessThan(minPriceNative) || p.PriceNative.GreaterThan(maxPriceNative)) {
		p.PriceNative = nil
		note("priceNative dropped: outside 1e-30 to 1e30")
	}
	for _, c := range []struct {
		name string
		v    **decimal.Decimal
	}{{"m5", &p.Change.M5}, {"h1", &p.Change.H1}, {"h6", &p.Change.H6}, {"h24", &p.Change.H24}} {
		if *c.v != nil && (*c.v).Abs().GreaterThanOrEqual(maxChangePct) {
			*c.v = nil
			note("price change %s dropped: beyond ±1e9 %%", c.name)
		}
	}
	if p.Reject == "" && !amountsInRange(p) {
		p.Reject = ReasonAmountOutOfRange
	}
}

// amountsInRange reports whether the liquidity, volumes and trade counts
// of p are within the bounds.
func amountsInRange(p *wirePair) bool {
	if p.LiquidityUSD != nil && p.LiquidityUSD.GreaterThanOrEqual(maxAmountUSD) {
		return false
	}
	for _, v := range []decimal.Decimal{p.Volume.M5, p.Volume.H1, p.Volume.H6, p.Volume.H24} {
		if v.GreaterThanOrEqual(maxAmountUSD) {
			return false
		}
	}
	for _, t := range []contract.Txns{p.Txns.M5, p.Txns.H1, p.Txns.H6, p.Txns.H24} {
		if t.Buys > maxCount || t.Sells > maxCount {
			return false
		}
	}
	return true
}

// isKey reports whether s is a base58 text of exactly 32 bytes, as every
// Solana address is. The length is checked first: decoding is quadratic.
func isKey(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	b, err := base58.Decode(s)
	return err == nil && len(b) == 32
}

// isPlainID reports whether s is a non-empty identifier of at most limit
// ASCII letters, digits and ':', '_', '.', '-' (addresses of other chains:
// 0x-hex, base58, module paths).
func isPlainID(s string, limit int) bool {
	if s == "" || len(s) > limit {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainIDByte(s[i]) {
			return false
		}
	}
	return true
}

func plainIDByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == ':' || c == '_' || c == '.' || c == '-'
}

// forbiddenRune reports control characters (C0, DEL, C1), the
// bidirectional controls (embeddings, overrides, isolates, marks) and the
// line and paragraph separators.
func forbiddenRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	case r == '\u2028', r == '\u2029':
		return true
	}
	return false
}

// cleanText trims white space around s and returns it when it is valid
// UTF-8 without forbidden runes (else ""), cut at a rune boundary to at
// most limit bytes. why says what was dropped or cut ("" when nothing
// was). The decoder turns invalid UTF-8 into U+FFFD, so U+FFFD counts as
// invalid UTF-8.
func cleanText(s string, limit int) (_ string, why string) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
		return "", "dropped: invalid UTF-8"
	}
	if strings.IndexFunc(s, forbiddenRune) >= 0 {
		return "", "dropped: control or bidirectional character"
	}
	if len(s) <= limit {
		return s, ""
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace), fmt.Sprintf("cut to %d bytes", limit)
}

// cleanID returns s trimmed when it is a plain identifier of at most limit
// bytes (dex ids and labels: letters, digits, '.', '_', '-'), else "" and
// why.
func cleanID(s string, limit int) (_ string, why string) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", ""
	case len(s) > limit:
		return "", fmt.Sprintf("dropped: longer than %d bytes", limit)
	case strings.ContainsRune(s, ':') || !isPlainID(s, limit):
		return "", "dropped: not a plain identifier"
	}
	return s, ""
}

// cleanURL keeps an upstream link only when it is an absolute http or
// https URL (scheme in any case, written back in lower case) with a host,
// no credentials, no white space, control character, quote, angle bracket
// or backslash, and at most maxURLBytes: it ends up in public bodies that
// dashboards render as links.
func cleanURL(u string) (_ string, why string) {
	u = strings.TrimSpace(u)
	switch {
	case u == "":
		return "", ""
	case len(u) > maxURLBytes:
		return "", fmt.Sprintf("dropped: longer than %d bytes", maxURLBytes)
	case strings.ContainsAny(u, "\"'<>\\`") || strings.IndexFunc(u, func(r rune) bool {
		return unicode.IsSpace(r) || forbiddenRune(r) || r == utf8.RuneError
	}) >= 0:
		return "", "dropped: white space, control, quote or markup character"
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.User != nil {
		return "", "dropped: not an http(s) link with a host"
	}
	return pu.Scheme + u[len(pu.Scheme):], ""
}

// cleanedWarning sums up the notes of every pair in one warning, naming at
// most five values; ok is false when nothing was cleaned.
func cleanedWarning(pairs []wirePair) (w contract.Warning, ok bool) {
	const shown = 5
	var parts []string
	total := 0
	for i := range pairs {
		p := &pairs[i]
		for _, n := range p.Notes {
			total++
			if len(parts) < shown {
				who := "a pair with an invalid address"
				if p.Address != "" {
					who = "pair " + p.Address
				}
				parts = append(parts, who+": "+n)
			}
		}
	}
	if total == 0 {
		return contract.Warning{}, false
	}
	msg := "The aggregator sent values that were cut or dropped before publishing: " + strings.Join(parts, "; ")
	if total > shown {
		msg += fmt.Sprintf("; and %d more", total-shown)
	}
	return contract.Warning{Code: WarnUpstreamDataCleaned, Message: msg + "."}, true
}
