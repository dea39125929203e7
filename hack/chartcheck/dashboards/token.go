package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// token is tokendata-token.json: the token as the edge serves it.
func token() *dashboard.DashboardBuilder {
	return newDashboard("tokendata-token", "tokendata / Token",
		"The token itself as the edge serves it: price, market cap and FDV, liquidity, 24 h volume, supply, holders, and the age of each domain's data. Metrics: METRICS.md (tokendata_token_*); a figure the edge does not hold has no series (no data), never a 0.",
		"1m", "now-7d").
		WithRow(row("Now")).
		WithPanel(statPanel("Price",
			"USD price from the selected pair, as /api/price publishes it.",
			size{4, 4},
			q(`max(tokendata_token_price_usd{namespace="$namespace"})`, "")).
			Unit("currencyUSD").
			GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel("Market cap",
			"Price × circulating supply, as /api/market publishes it.",
			size{4, 4},
			q(`max(tokendata_token_market_cap_usd{namespace="$namespace"})`, "")).
			Unit("currencyUSD").
			GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel("FDV",
			"Price × the disclosed maximum supply; no data when the issuer discloses none.",
			size{4, 4},
			q(`max(tokendata_token_fdv_usd{namespace="$namespace"})`, "")).
			Unit("currencyUSD").
			GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel("Liquidity",
			"USD liquidity summed over the kept pairs.",
			size{4, 4},
			q(`max(tokendata_token_liquidity_usd{namespace="$namespace"})`, "")).
			Unit("currencyUSD").
			GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel("Volume 24 h",
			"USD volume of the last 24 h summed over the kept pairs.",
			size{4, 4},
			q(`max(tokendata_token_volume_24h_usd{namespace="$namespace"})`, "")).
			Unit("currencyUSD").
			GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel("Holders",
			"Unique owners with a positive balance.",
			size{4, 4},
			q(`max(tokendata_token_holders{namespace="$namespace"})`, "")).
			Unit("short").
			GraphMode(common.BigValueGraphModeArea)).
		WithRow(row("Market")).
		WithPanel(lines(series("Price",
			"USD price of the token; gaps are times the edge held no usable price.",
			size{12, 8},
			q(`max(tokendata_token_price_usd{namespace="$namespace"})`, "price"))).
			Unit("currencyUSD")).
		WithPanel(lines(series("Market cap and FDV",
			"Market cap (price × circulating supply) and FDV (price × maximum supply, when disclosed).",
			size{12, 8},
			q(`max(tokendata_token_market_cap_usd{namespace="$namespace"})`, "market cap"),
			q(`max(tokendata_token_fdv_usd{namespace="$namespace"})`, "FDV"))).
			Unit("currencyUSD")).
		WithPanel(lines(series("Liquidity",
			"USD liquidity summed over the kept pairs.",
			size{12, 8},
			q(`max(tokendata_token_liquidity_usd{namespace="$namespace"})`, "liquidity"))).
			Unit("currencyUSD")).
		WithPanel(lines(series("Volume 24 h",
			"Rolling 24 h USD volume summed over the kept pairs, as the aggregator reports it.",
			size{12, 8},
			q(`max(tokendata_token_volume_24h_usd{namespace="$namespace"})`, "volume 24 h"))).
			Unit("currencyUSD")).
		WithRow(row("Supply and holders")).
		WithPanel(lines(series("Total supply",
			"On-chain total supply in whole tokens (every minted token circulates).",
			size{12, 8},
			q(`max(tokendata_token_supply_total{namespace="$namespace"})`, "total supply"))).
			Unit("short")).
		WithPanel(lines(series("Holders",
			"Unique owners whose summed balance is above zero.",
			size{12, 8},
			q(`max(tokendata_token_holders{namespace="$namespace"})`, "holders"))).
			Unit("short").
			Decimals(0)).
		WithRow(row("Freshness")).
		WithPanel(lines(series("Data age per domain",
			"time() − updated_at of the document each edge serves, per domain (the oldest over the replicas). Compare with stale-after (by default market 180 s, supply 900 s, holders 3600 s, metadata 24 h).",
			size{24, 8},
			q(`time() - min by (domain) (tokendata_token_updated_timestamp_seconds{namespace="$namespace"})`, "{{domain}}"))).
			Unit("s"))
}
