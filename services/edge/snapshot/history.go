package snapshot

import (
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// HistoryMeasures are the measures of /api/history/{measure}/{window}, by
// path segment, in the order of the view's history answers.
var HistoryMeasures = [NumHistMeasures]struct {
	Segment string
	Measure contract.Measure
}{
	{"price", contract.MeasurePriceUSD},
	{"market-cap", contract.MeasureMarketCapUSD},
	{"fdv", contract.MeasureFDVUSD},
	{"liquidity", contract.MeasureLiquidityUSD},
	{"volume", contract.MeasureVolume24hUSD},
	{"supply", contract.MeasureSupply},
	{"holders", contract.MeasureHolders},
}

const (
	NumHistMeasures = 7
	NumHistWindows  = 5
)

// HistKey names one history answer.
type HistKey struct {
	Measure contract.Measure
	Window  contract.Window
}

// HistorySeries is one measure over one window as the edge serves it, and
// as a chart draws it: read once per change, never modified after.
type HistorySeries struct {
	Measure contract.Measure
	Window  contract.Window
	// Tier is the tier the window reads (contract.Window.Tier).
	Tier contract.Tier
	// From and To bound the window: To is when it was read, From is To
	// minus the window (for "all", minus the 1-hour tier's retention).
	From, To time.Time
	// Points are oldest first, at most the mirror's MaxHistoryPoints: the
	// tier's own, or merged into buckets of Bucket (downsampled). A point's
	// T is a sample's time or a bucket's start; V is the value (a price
	// bucket's close, with O, H and L).
	Points []contract.Point
	// Bucket is the span of one point: 0 for samples, else the tier's
	// bucket or the width the edge merged them into.
	Bucket      time.Duration
	Downsampled bool
	// Gaps are found on the tier's points before any merge, so that an
	// outage shorter than a merged bucket still shows; never interpolated.
	Gaps []contract.Gap
	// Truncated is set when the window holds more than the edge keeps: the
	// oldest points (and gaps) are left out.
	Truncated bool
}

// History is the series of measure m over window w, nil when the edge
// has not read it (yet, or ever: the FDV of a token that discloses no
// maximum supply). The portal's charts read it; it must not be modified.
func (st *State) History(m contract.Measure, w contract.Window) *HistorySeries {
	return st.Hist[HistKey{m, w}]
}
