package market

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// wirePair is one pair as either aggregator lists it, reduced to what the
// market document needs. Every number is exact: parsed from the literal the
// aggregator wrote, never through a float64.
type wirePair struct {
	Chain   string
	Address string
	Dex     string
	URL     string
	Base    contract.TokenRef
	Quote   contract.TokenRef
	Labels  []string
	// PriceUSD is the USD price of the pair's base token (nil: absent).
	PriceUSD *decimal.Decimal
	// PriceNative is the price of the base token in quote tokens (nil:
	// absent).
	PriceNative *decimal.Decimal
	// LiquidityUSD is nil when the aggregator reports no liquidity.
	LiquidityUSD *decimal.Decimal
	Volume       contract.Windows[decimal.Decimal]
	Txns         contract.Windows[contract.Txns]
	// Change is the price change in percent per window (nil: absent).
	Change    contract.Windows[*decimal.Decimal]
	CreatedAt *time.Time
	// Reject is the reason (ReasonInvalidAddress, ReasonAmountOutOfRange)
	// that leaves the pair out of every total; "" for a pair that may be
	// kept. Set by validatePair.
	Reject string
	// Notes say which values validatePair cut or dropped.
	Notes []string
}

// num is a JSON value that holds a decimal number: a JSON number literal
// (DexScreener's volumes), a JSON string holding one (DexScreener's prices,
// every GeckoTerminal amount), or null / an empty string (absent). It keeps
// the literal so that nothing goes through a float64.
type num struct {
	lit string
	set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *num) UnmarshalJSON(b []byte) error {
	*n = num{}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s != "" {
			n.lit, n.set = s, true
		}
		return nil
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		n.lit, n.set = string(b), true
		return nil
	}
	return fmt.Errorf("%s is not a number", clip(string(b)))
}

// Bounds of a plausible aggregator literal. A literal outside them is an
// invalid answer, not a number to publish (and a huge exponent or a huge
// literal would make parsing or formatting it a denial of service). The
// tighter bounds of each figure are in validate.go.
const (
	maxExponent = 40  // no USD figure or count reaches 1e40
	minExponent = -60 // prices of tokens with many decimals stay above 1e-60
	maxLiteral  = 256 // characters of one literal
	maxDigits   = 80  // significant digits kept; more are rounded away
)

// parseDecimal converts a literal to an exact decimal, rounded to
// maxDigits significant digits when it has more. It names field in its
// errors.
func parseDecimal(field string, n num, allowNegative bool) (*decimal.Decimal, error) {
	if !n.set {
		return nil, nil
	}
	if len(n.lit) > maxLiteral {
		return nil, fmt.Errorf("%s: a literal of %d characters is out of any plausible range", field, len(n.lit))
	}
	d, err := decimal.NewFromString(n.lit)
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not a decimal number", field, clip(n.lit))
	}
	digits := d.NumDigits()
	e := int(d.Exponent()) + digits - 1 // the power of ten of the leading digit
	if d.Sign() != 0 && (e > maxExponent || e < minExponent) {
		return nil, fmt.Errorf("%s: %s is out of any plausible range", field, clip(n.lit))
	}
	if digits > maxDigits {
		d = d.Round(int32(maxDigits - 1 - e))
	}
	if !allowNegative && d.Sign() < 0 {
		return nil, fmt.Errorf("%s: %s is negative", field, clip(n.lit))
	}
	return &d, nil
}

// parseCount converts a literal to a non-negative integer count.
func parseCount(field string, n num) (int64, error) {
	if !n.set {
		return 0, nil
	}
	v, err := strconv.ParseInt(n.lit, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %s is not a whole number", field, clip(n.lit))
	}
	if v < 0 {
		return 0, fmt.Errorf("%s: %s is negative", field, clip(n.lit))
	}
	return v, nil
}

// clip quotes s for an error message, cut to a short length: the text
// comes from an upstream.
func clip(s string) string {
	const limit = 40
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return strconv.Quote(s)
}

// invalid is an invalid answer of upstream; a retry may get a good one.
func invalid(upstream string, format string, a ...any) *collector.Error {
	return collector.Errorf(contract.ErrKindInvalid, true, "%s: %s", upstream, fmt.Sprintf(format, a...)).WithRemedy(variableOf(upstream))
}

// variableOf is the variable that holds an upstream's base URL, named in
// remedies.
func variableOf(upstream string) string {
	if upstream == contract.UpstreamGeckoTerminal {
		return "GECKOTERMINAL_URL"
	}
	return "DEXSCREENER_URL"
}

// decodeStrict unmarshals b into v, rejecting trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) != 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}

// jsonError describes a decoding error without quoting the body.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("unexpected JSON %s for field %q", te.Value, te.Field)
	case err.Error() == "unexpected EOF":
		return "truncated JSON"
	}
	return "malformed JSON: " + clip(err.Error())
}
