package contract

// The history: one time series per measure, kept at three resolutions
// (tiers) in Redis next to the documents. docs/data-model.md (History) describes
// it for operators; package store writes and reads it.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
)

// Measure is one time series of the history.
type Measure string

// The measures. USD figures are the market document's exact decimals (and
// market cap and FDV computed from them as the edge computes them);
// supply is the raw base-unit integer; holders a count.
const (
	// MeasurePriceUSD is the market document's price_usd. Its buckets are
	// OHLC.
	MeasurePriceUSD Measure = "price_usd"
	// MeasureMarketCapUSD is price × circulating supply (whole tokens).
	MeasureMarketCapUSD Measure = "market_cap_usd"
	// MeasureFDVUSD is price × maximum supply; never sampled for a token
	// that discloses no maximum supply.
	MeasureFDVUSD Measure = "fdv_usd"
	// MeasureLiquidityUSD is the market document's liquidity_usd.
	MeasureLiquidityUSD Measure = "liquidity_usd"
	// MeasureVolume24hUSD is the market document's volume_usd.h24.
	MeasureVolume24hUSD Measure = "volume_24h_usd"
	// MeasureSupply is the supply document's total_raw: base units.
	MeasureSupply Measure = "supply"
	// MeasureHolders is the holders document's holders.
	MeasureHolders Measure = "holders"
)

// Measures lists every measure in a stable order.
var Measures = []Measure{MeasurePriceUSD, MeasureMarketCapUSD, MeasureFDVUSD, MeasureLiquidityUSD,
	MeasureVolume24hUSD, MeasureSupply, MeasureHolders}

// Valid reports whether m is one of the measures.
func (m Measure) Valid() bool {
	switch m {
	case MeasurePriceUSD, MeasureMarketCapUSD, MeasureFDVUSD, MeasureLiquidityUSD,
		MeasureVolume24hUSD, MeasureSupply, MeasureHolders:
		return true
	}
	return false
}

// Domain is the domain whose successful poll samples m: its refresh is
// the measure's expected interval between samples.
func (m Measure) Domain() Domain {
	switch m {
	case MeasureSupply:
		return DomainSupply
	case MeasureHolders:
		return DomainHolders
	}
	return DomainMarket
}

// OHLC reports whether m's buckets keep open, high, low and close (the
// price), rather than the last value of the bucket (every other measure:
// a supply, a holder count, a market cap or a 24 h volume read at the end
// of the interval is the figure of that interval, where an average would
// be a value nobody ever published).
func (m Measure) OHLC() bool { return m == MeasurePriceUSD }

// Unit names what m's values count: "usd", "base_units" (the raw integer
// amount; the supply document's decimals say how to scale it) or
// "holders".
func (m Measure) Unit() string {
	switch m {
	case MeasureSupply:
		return "base_units"
	case MeasureHolders:
		return "holders"
	}
	return "usd"
}

// Tier is one resolution of a measure's series.
type Tier string

// The tiers: every sample for HISTORY_RAW_RETENTION (48 h), then one
// bucket per 5 minutes for HISTORY_5M_RETENTION (30 days), then one per
// hour for HISTORY_1H_RETENTION (2 years). Every sample updates the
// current bucket of each tier as it is written.
const (
	TierRaw Tier = "raw"
	Tier5m  Tier = "5m"
	Tier1h  Tier = "1h"
)

// Tiers lists the tiers from the finest.
var Tiers = []Tier{TierRaw, Tier5m, Tier1h}

// Valid reports whether t is one of the tiers.
func (t Tier) Valid() bool { return t == TierRaw || t == Tier5m || t == Tier1h }

// Bucket is the tier's bucket length; 0 for TierRaw (one point per
// sample).
func (t Tier) Bucket() time.Duration {
	switch t {
	case Tier5m:
		return 5 * time.Minute
	case Tier1h:
		return time.Hour
	}
	return 0
}

// HistoryKey is the Redis key of one measure's series at one tier:
// tokendata:<mint>:history:<measure>:<tier>. It is a sorted set: score
// the point's time in Unix milliseconds (a sample's time, or a bucket's
// start), member the point as compact JSON (Point).
func HistoryKey(mint string, m Measure, t Tier) string {
	return KeyPrefix + ":" + mint + ":history:" + string(m) + ":" + string(t)
}

// Window is a span of history a reader asks for.
type Window string

// The windows, each read from one tier (Window.Tier).
const (
	Window24h Window = "24h"
	Window7d  Window = "7d"
	Window30d Window = "30d"
	Window1y  Window = "1y"
	// WindowAll is everything the coarsest tier keeps.
	WindowAll Window = "all"
)

// HistoryWindows lists every window from the shortest.
var HistoryWindows = []Window{Window24h, Window7d, Window30d, Window1y, WindowAll}

// Valid reports whether w is one of the windows.
func (w Window) Valid() bool {
	switch w {
	case Window24h, Window7d, Window30d, Window1y, WindowAll:
		return true
	}
	return false
}

// Duration is how far back w reaches; 0 for WindowAll (no bound but the
// tier's retention).
func (w Window) Duration() time.Duration {
	switch w {
	case Window24h:
		return 24 * time.Hour
	case Window7d:
		return 7 * 24 * time.Hour
	case Window30d:
		return 30 * 24 * time.Hour
	case Window1y:
		return 365 * 24 * time.Hour
	}
	return 0
}

// Tier is the tier w is read from: 24 h from every sample, 7 and 30 days
// from 5-minute buckets, a year and everything from hourly ones.
func (w Window) Tier() Tier {
	switch w {
	case Window24h:
		return TierRaw
	case Window7d, Window30d:
		return Tier5m
	}
	return Tier1h
}

// Sample is one value of a measure, read by a successful poll. Its time
// is the document's updated_at, and it is written with the document, in
// the same step (store.Store.Write).
type Sample struct {
	Measure Measure
	// Value is a non-negative decimal in plain notation ("0.005747",
	// "987654321123456"), exactly as the document states it.
	Value string
}

// Point is one stored point of a series: a sample (TierRaw) or a bucket.
// Its JSON is the sorted-set member, so the field names are short. A
// bucket's times F and Z are those of the first and last sample merged
// into it: gaps are found on them (see store.Gaps), whatever the tier.
type Point struct {
	// T is the sample's time, or the bucket's start, in Unix milliseconds
	// (also the member's score).
	T int64 `json:"t"`
	// V is the value: the sample's, or the last one of the bucket (its
	// close for the price).
	V string `json:"v"`
	// O, H and L are the open, high and low of a price bucket (empty
	// elsewhere: V is the close).
	O string `json:"o,omitempty"`
	H string `json:"h,omitempty"`
	L string `json:"l,omitempty"`
	// N counts the samples merged into a bucket (0 for a sample: one).
	N int64 `json:"n,omitempty"`
	// F and Z are the times (Unix ms) of the first and last sample of a
	// bucket; 0 for a sample (both are T). An imported bucket (BF) covers
	// its whole interval, up to the time it was imported.
	F int64 `json:"f,omitempty"`
	Z int64 `json:"z,omitempty"`
	// Sim marks a value of a simulated upstream (demo mode), the seeded
	// past of demo mode included.
	Sim bool `json:"sim,omitempty"`
	// BF marks a point this service did not sample itself: imported from
	// an upstream's own history (GeckoTerminal's OHLCV) or, with Sim, the
	// seeded past of demo mode.
	BF bool `json:"bf,omitempty"`
}

// First is the time of the point's first sample (Unix ms).
func (p Point) First() int64 {
	if p.F != 0 {
		return p.F
	}
	return p.T
}

// Last is the time of the point's last sample (Unix ms).
func (p Point) Last() int64 {
	if p.Z != 0 {
		return p.Z
	}
	return p.T
}

// Count is the number of samples in the point (1 for a sample).
func (p Point) Count() int64 { return max(p.N, 1) }

// Time is T as a time.Time (UTC).
func (p Point) Time() time.Time { return time.UnixMilli(p.T).UTC() }

// MaxValueLen bounds a value's length. A market cap with every digit of
// price × supply is a few dozen characters; a price the market collector
// accepts may have 80 significant digits after many zeros, and a figure
// longer than this is not sampled (MarketSamples).
const MaxValueLen = 120

// CanonicalValue checks that s is a non-negative decimal in plain
// notation and returns it canonical: no sign, no exponent, no leading
// zero in the integer part ("0" alone excepted), no trailing zero in the
// fraction, no lone point. Canonical values compare as numbers by length
// and bytes, which lets Redis keep a bucket's high and low exactly.
func CanonicalValue(s string) (string, error) {
	if s == "" || len(s) > MaxValueLen {
		return "", fmt.Errorf("value of %d characters: want 1 to %d", len(s), MaxValueLen)
	}
	intPart, frac, hasPoint := strings.Cut(s, ".")
	if intPart == "" || (hasPoint && frac == "") || !digits(intPart) || !digits(frac) {
		return "", fmt.Errorf("value %.40q is not a non-negative decimal in plain notation", s)
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		return intPart, nil
	}
	return intPart + "." + frac, nil
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CompareValues compares two canonical values (CanonicalValue) as
// numbers: -1, 0 or +1.
func CompareValues(a, b string) int {
	ai, af, _ := strings.Cut(a, ".")
	bi, bf, _ := strings.Cut(b, ".")
	if len(ai) != len(bi) {
		if len(ai) < len(bi) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(ai, bi); c != 0 {
		return c
	}
	// Same integer part: compare the fractions digit by digit, the
	// shorter one padded with zeros.
	for i := range max(len(af), len(bf)) {
		ca, cb := byte('0'), byte('0')
		if i < len(af) {
			ca = af[i]
		}
		if i < len(bf) {
			cb = bf[i]
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Validate checks a sample before it is stored.
func (s Sample) Validate() error {
	if !s.Measure.Valid() {
		return fmt.Errorf("unknown measure %.32q", s.Measure)
	}
	if _, err := CanonicalValue(s.Value); err != nil {
		return fmt.Errorf("%s: %w", s.Measure, err)
	}
	return nil
}

// MarketSamples are the history samples of a market document, as the
// edge publishes its figures (at the display precision of
// amount.RoundUSD): none unless a price is published (status
// ok); then the price, the liquidity and the 24 h volume, the market cap
// (price × circulating supply) when circulating is known, and the FDV
// (price × maximum supply) when a maximum supply is disclosed. Both
// supplies are in whole tokens. A figure that is no sample value (below
// zero, longer than MaxValueLen) is left out rather than refused with
// the document.
func MarketSamples(m Market, circulating, maxSupply *decimal.Decimal) []Sample {
	if m.Status != MarketOK || m.PriceUSD == nil {
		return nil
	}
	var out []Sample
	add := func(ms Measure, d decimal.Decimal) {
		if v := d.String(); d.Sign() >= 0 && len(v) <= MaxValueLen {
			out = append(out, Sample{Measure: ms, Value: v})
		}
	}
	add(MeasurePriceUSD, *m.PriceUSD)
	if circulating != nil {
		v, _ := m.PriceTimes(*circulating)
		add(MeasureMarketCapUSD, v)
	}
	if maxSupply != nil {
		v, _ := m.PriceTimes(*maxSupply)
		add(MeasureFDVUSD, v)
	}
	add(MeasureLiquidityUSD, amount.RoundUSD(m.LiquidityUSD, 0))
	add(MeasureVolume24hUSD, amount.RoundUSD(m.VolumeUSD.H24, 0))
	return out
}

// SupplySamples are the history samples of a supply document: the total
// supply in base units.
func SupplySamples(s Supply) []Sample {
	return []Sample{{Measure: MeasureSupply, Value: s.TotalRaw}}
}

// HoldersSamples are the history samples of a holders document.
func HoldersSamples(h Holders) []Sample {
	return []Sample{{Measure: MeasureHolders, Value: strconv.FormatUint(h.Holders, 10)}}
}

// Gap is a span without samples in a history series: from the last
// sample before it to the first after it (or to now, when Open).
type Gap struct {
	From, To time.Time
	// Open is set for a gap that lasts until now: no sample since From.
	Open bool
}
