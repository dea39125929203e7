package edge

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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// tokenFigure indexes tokenFigures.values.
type tokenFigure int

const (
	figPrice tokenFigure = iota
	figMarketCap
	figFDV
	figLiquidity
	figVolume24h
	figSupply
	figHolders
	numTokenFigures
)

// tokenFigures are the gauges' values of one view.
type tokenFigures struct {
	values [numTokenFigures]float64
	has    [numTokenFigures]bool
	// updated is each held domain's updated_at, in Unix seconds.
	updated map[contract.Domain]float64
}

func (f *tokenFigures) set(i tokenFigure, n *json.Number) {
	if n == nil {
		return
	}
	v, err := strconv.ParseFloat(string(*n), 64)
	if err != nil {
		return // the bodies never publish such a number; export nothing rather than a wrong one
	}
	f.values[i], f.has[i] = v, true
}

// tokenFigures computes the gauges of the state being rendered.
func (r *renderer) tokenFigures() *tokenFigures {
	f := &tokenFigures{updated: map[contract.Domain]float64{}}
	for d, doc := range r.st.docs {
		f.updated[d] = float64(doc.env.UpdatedAt.UnixNano()) / 1e9
	}
	sp, err := r.supplies()
	if err != nil {
		sp = nil // the supply routes say why; the gauges leave supply out
	}
	if sp != nil {
		f.set(figSupply, &sp.total.value)
	}
	if m := r.st.market(); m != nil {
		f.set(figPrice, numPtr(m.PriceUSD))
		mcap, fdv := r.valuation(m, sp)
		f.set(figMarketCap, mcap)
		f.set(figFDV, fdv)
		if m.Status == contract.MarketOK { // not_indexed and no_usable_pair sum no pair: no figure, not a zero
			f.set(figLiquidity, ptr(usdTotal(m.LiquidityUSD)))
			f.set(figVolume24h, ptr(usdTotal(m.VolumeUSD.H24)))
		}
	}
	if h := r.st.holders(); h != nil {
		n := json.Number(strconv.FormatUint(h.Holders, 10))
		f.set(figHolders, &n)
	}
	return f
}

// tokenCollector exports the current view's tokenFigures.
type tokenCollector struct {
	s       *Server
	descs   [numTokenFigures]*prometheus.Desc
	updated *prometheus.Desc
}

func newTokenCollector(s *Server) *tokenCollector {
	name := func(n string) string { return prometheus.BuildFQName(ops.Namespace, "token", n) }
	c := &tokenCollector{s: s}
	help := [numTokenFigures][2]string{
		figPrice:     {"price_usd", "USD price of the token from the selected pair (as /api/price); absent without a usable price."},
		figMarketCap: {"market_cap_usd", "Market cap in USD: price × circulating supply, as /api/market publishes it; absent without price or supply."},
		figFDV:       {"fdv_usd", "Fully diluted valuation in USD: price × maximum supply; absent when the issuer discloses no maximum supply."},
		figLiquidity: {"liquidity_usd", "USD liquidity summed over the kept pairs; absent unless the market status is ok."},
		figVolume24h: {"volume_24h_usd", "USD volume of the last 24 h summed over the kept pairs; absent unless the market status is ok."},
		figSupply:    {"supply_total", "On-chain total supply in whole tokens; absent without the supply document."},
		figHolders:   {"holders", "Unique owners with a positive balance; absent without the holders document."},
	}
	for i, h := range help {
		c.descs[i] = prometheus.NewDesc(name(h[0]), h[1], nil, nil)
	}
	c.updated = prometheus.NewDesc(name("updated_timestamp_seconds"),
		"updated_at of the domain's document the edge serves, in Unix seconds (age: time() - this); absent while the edge holds none.",
		[]string{"domain"}, nil)
	return c
}

func (c *tokenCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.updated
}

func (c *tokenCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.s.view.Load()
	if v == nil || v.token == nil {
		return
	}
	f := v.token
	for i, d := range c.descs {
		if f.has[i] {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f.values[i])
		}
	}
	for _, d := range contract.Domains { // in a fixed order
		if t, ok := f.updated[d]; ok {
			ch <- prometheus.MustNewConstMetric(c.updated, prometheus.GaugeValue, t, string(d))
		}
	}
}
