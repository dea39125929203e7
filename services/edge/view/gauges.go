package view

// The token's own figures as Prometheus gauges (tokendata_token_*), for
// the "token" dashboard. They are computed once per rendering of the view,
// from the same numbers the bodies publish, and read by the scrape from
// the current view: a scrape does no arithmetic and never sees two views
// mixed. Float64 is fine here (metrics are not the public API); each
// value is parsed from the exact decimal string the API publishes.
//
// A figure the edge does not hold (no market document, no price, no
// disclosed maximum supply...) is not exported at all, rather than as 0
// or NaN: a 0 would draw as a real price on the dashboard, and an absent
// series is what `absent()` and Grafana's "no data" are made for.

import (
	"encoding/json"
	"strconv"

	"github.com/tokendata/tokendata/shared/contract"
)

// tokenFigure indexes tokenFigures.values.
type tokenFigure int

const (
	FigPrice tokenFigure = iota
	FigMarketCap
	FigFDV
	FigLiquidity
	FigVolume24h
	FigSupply
	FigHolders
	NumTokenFigures
)

// tokenFigures are the gauges' values of one view.
type tokenFigures struct {
	Values [NumTokenFigures]float64
	Has    [NumTokenFigures]bool
	// updated is each held domain's updated_at, in Unix seconds.
	Updated map[contract.Domain]float64
}

func (f *tokenFigures) set(i tokenFigure, n *json.Number) {
	if n == nil {
		return
	}
	v, err := strconv.ParseFloat(string(*n), 64)
	if err != nil {
		return // the bodies never publish such a number; export nothing rather than a wrong one
	}
	f.Values[i], f.Has[i] = v, true
}

// tokenFigures computes the gauges of the state being rendered.
func (r *renderer) tokenFigures() *tokenFigures {
	f := &tokenFigures{Updated: map[contract.Domain]float64{}}
	for d, doc := range r.st.Docs {
		f.Updated[d] = float64(doc.Env.UpdatedAt.UnixNano()) / 1e9
	}
	sp, err := r.supplies()
	if err != nil {
		sp = nil // the supply routes say why; the gauges leave supply out
	}
	if sp != nil {
		f.set(FigSupply, &sp.total.value)
	}
	if m := r.st.Market(); m != nil {
		f.set(FigPrice, numPtr(m.PriceUSD))
		mcap, fdv := r.valuation(m, sp)
		f.set(FigMarketCap, mcap)
		f.set(FigFDV, fdv)
		if m.Status == contract.MarketOK { // not_indexed and no_usable_pair sum no pair: no figure, not a zero
			f.set(FigLiquidity, ptr(usdTotal(m.LiquidityUSD)))
			f.set(FigVolume24h, ptr(usdTotal(m.VolumeUSD.H24)))
		}
	}
	if h := r.st.Holders(); h != nil {
		n := json.Number(strconv.FormatUint(h.Holders, 10))
		f.set(FigHolders, &n)
	}
	return f
}
