package view

// Bodies of the history: /api/history/{measure}/{window}.

import (
	"fmt"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/contract"
)

// historyBody is a measure over a window. Values are exact decimal
// strings, as stored: a chart library parses them as it likes, and no
// figure is ever rounded through a float on the way.
type historyBody struct {
	Mint    string `json:"mint"`
	Measure string `json:"measure"`
	Window  string `json:"window"`
	Unit    string `json:"unit"`
	// Decimals scale a base_units value; null for other units.
	Decimals      *uint8           `json:"decimals"`
	Resolution    string           `json:"resolution"`
	BucketSeconds *int64           `json:"bucket_seconds"`
	Downsampled   bool             `json:"downsampled"`
	OHLC          bool             `json:"ohlc"`
	From          string           `json:"from"`
	To            string           `json:"to"`
	Points        any              `json:"points"`
	Gaps          []historyGapBody `json:"gaps"`
	Truncated     bool             `json:"truncated"`
	Source        historySource    `json:"source"`
	UpdatedAt     *string          `json:"updated_at"`
	Stale         bool             `json:"stale"`
}

// historyValuePoint is a point of a measure that is not the price.
type historyValuePoint struct {
	Time  string `json:"time"`
	Value string `json:"value"`
}

// historyOHLCPoint is a point of the price: a sample's four values are
// its one price.
type historyOHLCPoint struct {
	Time  string `json:"time"`
	Open  string `json:"open"`
	High  string `json:"high"`
	Low   string `json:"low"`
	Close string `json:"close"`
}

type historyGapBody struct {
	From string `json:"from"`
	To   string `json:"to"`
	Open bool   `json:"open"`
}

// historySource says where the values came from: the upstreams the
// domain's collector samples, and the points it did not sample itself.
type historySource struct {
	Upstreams []string `json:"upstreams"`
	// Backfill is null when every point was sampled by the collector.
	Backfill  *historyBackfill `json:"backfill"`
	Simulated bool             `json:"simulated"`
}

// historyBackfill names the imported points: every point up to Until
// (imports only ever go before the oldest sampled point).
type historyBackfill struct {
	// Name is "geckoterminal" (the pool's OHLCV candles) or "simulated"
	// (demo mode's seeded past).
	Name  string `json:"name"`
	Until string `json:"until"`
}

// historyUpstreams are the upstreams each domain's collector samples.
var historyUpstreams = map[contract.Domain][]string{
	contract.DomainMarket:  {contract.UpstreamDexScreener, contract.UpstreamGeckoTerminal},
	contract.DomainSupply:  {contract.UpstreamSolanaRPC},
	contract.DomainHolders: {contract.UpstreamSolanaRPC},
}

// historyResolutions name the tiers in bodies.
var historyResolutions = map[contract.Tier]string{contract.TierRaw: "sample", contract.Tier5m: "5m", contract.Tier1h: "1h"}

// historyRoutes are the rendered routes of the history answers, by
// historyMeasures index: the domain's freshness group.
var historyRoutes = func() (out [snapshot.NumHistMeasures]renderedRoute) {
	for i, hm := range snapshot.HistoryMeasures {
		g := answer.GroupMarket
		switch hm.Measure.Domain() {
		case contract.DomainSupply:
			g = answer.GroupSupply
		case contract.DomainHolders:
			g = answer.GroupHolders
		}
		out[i] = renderedRoute{Path: PathHistory, group: g, render: (*renderer).history, compress: true}
	}
	return out
}()

func historyRoute(m contract.Measure) renderedRoute {
	for i, hm := range snapshot.HistoryMeasures {
		if hm.Measure == m {
			return historyRoutes[i]
		}
	}
	panic("no history route of " + string(m))
}

// historyStale reports whether hs's last point is past its domain's
// stale-after, and notes when it will be.
func (r *renderer) historyStale(hs *snapshot.HistorySeries) bool {
	if hs == nil || len(hs.Points) == 0 {
		return false
	}
	flip := time.UnixMilli(hs.Points[len(hs.Points)-1].Last()).Add(r.Timings[hs.Measure.Domain()].StaleAfter)
	stale := r.now.After(flip)
	if !stale {
		r.noteChange(flip.Add(time.Millisecond))
	}
	return stale
}

// history renders the answer of r.histIdx.
func (r *renderer) history() *answer.Answer {
	hm := snapshot.HistoryMeasures[r.histIdx[0]]
	m, w := hm.Measure, contract.HistoryWindows[r.histIdx[1]]
	if _, ok := r.MaxSupplyWhole(); m == contract.MeasureFDVUSD && !ok {
		return r.maxNotDisclosed()
	}
	hs := r.st.History(m, w)
	if hs == nil {
		return answer.NewError(answer.StatusServiceUnavailable, answer.CodeDataUnavailable,
			fmt.Sprintf("No %s history has been read from the store yet; retry later.", hm.Segment), r.RetryAfter)
	}
	b := historyBody{Mint: r.Token.Mint, Measure: hm.Segment, Window: string(w), Unit: m.Unit(),
		Resolution: historyResolutions[hs.Tier], Downsampled: hs.Downsampled, OHLC: m.OHLC(),
		From: answer.FormatTime(hs.From), To: answer.FormatTime(hs.To), Gaps: make([]historyGapBody, 0, len(hs.Gaps)),
		Truncated: hs.Truncated, Source: historySource{Upstreams: historyUpstreams[m.Domain()]}}
	if m == contract.MeasureSupply {
		b.Decimals = r.decimals()
	}
	if hs.Bucket > 0 {
		b.BucketSeconds = ptr(int64(hs.Bucket / time.Second))
	}
	for _, g := range hs.Gaps {
		b.Gaps = append(b.Gaps, historyGapBody{From: answer.FormatTime(g.From), To: answer.FormatTime(g.To), Open: g.Open})
	}
	var lastBF *contract.Point
	if m.OHLC() {
		pts := make([]historyOHLCPoint, len(hs.Points))
		for i, p := range hs.Points {
			pts[i] = historyOHLCPoint{Time: answer.FormatTime(p.Time()), Open: orValue(p.O, p.V), High: orValue(p.H, p.V),
				Low: orValue(p.L, p.V), Close: p.V}
		}
		b.Points = pts
	} else {
		pts := make([]historyValuePoint, len(hs.Points))
		for i, p := range hs.Points {
			pts[i] = historyValuePoint{Time: answer.FormatTime(p.Time()), Value: p.V}
		}
		b.Points = pts
	}
	for i := range hs.Points {
		p := &hs.Points[i]
		b.Source.Simulated = b.Source.Simulated || p.Sim
		if p.BF {
			lastBF = p
		}
	}
	if lastBF != nil {
		name := contract.UpstreamGeckoTerminal
		if lastBF.Sim {
			name = "simulated"
		}
		b.Source.Backfill = &historyBackfill{Name: name, Until: answer.FormatTime(time.UnixMilli(lastBF.Last()))}
	}
	var in answer.DataInfo
	if n := len(hs.Points); n > 0 {
		at := time.UnixMilli(hs.Points[n-1].Last()).UTC()
		in = answer.DataInfo{Present: true, UpdatedAt: at, Newest: at, Stale: r.historyStale(hs)}
		b.UpdatedAt = ptr(answer.FormatTime(at))
		b.Stale = in.Stale
	}
	return r.okJSON(b, in)
}

func orValue(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
