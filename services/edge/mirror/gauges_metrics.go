package mirror

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/ops"
)

// tokenCollector exports the current view's tokenFigures.
type tokenCollector struct {
	s       *Mirror
	descs   [view.NumTokenFigures]*prometheus.Desc
	updated *prometheus.Desc
}

func newTokenCollector(s *Mirror) *tokenCollector {
	name := func(n string) string { return prometheus.BuildFQName(ops.Namespace, "token", n) }
	c := &tokenCollector{s: s}
	help := [view.NumTokenFigures][2]string{
		view.FigPrice:     {"price_usd", "USD price of the token from the selected pair (as /api/price); absent without a usable price."},
		view.FigMarketCap: {"market_cap_usd", "Market cap in USD: price × circulating supply, as /api/market publishes it; absent without price or supply."},
		view.FigFDV:       {"fdv_usd", "Fully diluted valuation in USD: price × maximum supply; absent when the issuer discloses no maximum supply."},
		view.FigLiquidity: {"liquidity_usd", "USD liquidity summed over the kept pairs; absent unless the market status is ok."},
		view.FigVolume24h: {"volume_24h_usd", "USD volume of the last 24 h summed over the kept pairs; absent unless the market status is ok."},
		view.FigSupply:    {"supply_total", "On-chain total supply in whole tokens; absent without the supply document."},
		view.FigHolders:   {"holders", "Unique owners with a positive balance; absent without the holders document."},
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
	if v == nil || v.Token == nil {
		return
	}
	f := v.Token
	for i, d := range c.descs {
		if f.Has[i] {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f.Values[i])
		}
	}
	for _, d := range contract.Domains { // in a fixed order
		if t, ok := f.Updated[d]; ok {
			ch <- prometheus.MustNewConstMetric(c.updated, prometheus.GaugeValue, t, string(d))
		}
	}
}
