package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// collectors is tokendata-collectors.json: the collectors (supply, market, holders).
func collectors() *dashboard.DashboardBuilder {
	return newDashboard("tokendata-collectors", "tokendata / Collectors",
		"The collectors (supply, market, holders): freshness per domain, failures by kind, upstream requests and latency, holders enumeration, the selected market pair. Alerts: files/alerts/tokendata-rules.yaml; metrics: METRICS.md.",
		"30s", "now-6h").
		WithRow(row("Now")).
		WithPanel(statPanel("Since the last good poll",
			"Time since each collector last wrote its domain. Compare with the refresh interval (market 60 s, supply 300 s, holders 900 s, metadata 3600 s by default).",
			size{10, 5},
			q(`time() - max by (collector, domain) (tokendata_collector_last_success_timestamp_seconds{namespace="$namespace"})`, "{{collector}}/{{domain}}")).
			Unit("s").
			Thresholds(thresholds("green", at(900, "orange"), at(3600, "red"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Consecutive failures",
			"Failed polls since the last success. TokendataCollectorFailing fires at 3 for 5 minutes.",
			size{6, 5},
			q(`max by (collector, domain) (tokendata_collector_consecutive_failures{namespace="$namespace"})`, "{{collector}}/{{domain}}")).
			Thresholds(thresholds("green", at(1, "orange"), at(3, "red"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Holders enumeration",
			"Whether the holders RPC node can enumerate the token's accounts (its last verdict). TokendataHoldersUnavailable fires when it cannot.",
			size{4, 5},
			q(`max(tokendata_holders_enumeration_unsupported{namespace="$namespace"})`, "holders")).
			Thresholds(thresholds("green", at(1, "red"))).
			Mappings(states(state{"0", "supported", "green"}, state{"1", "unsupported", "red"})).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Selected pair liquidity",
			"Liquidity in USD of the pair the price comes from (0: none selected).",
			size{4, 5},
			q(`max(tokendata_market_selected_pair_liquidity_usd{namespace="$namespace"})`, "liquidity")).
			Unit("currencyUSD").
			Thresholds(thresholds("red", at(1, "orange"), at(10000, "green"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithRow(row("Polls")).
		WithPanel(series("Polls by result",
			"Polls per collector, domain and result (ok, or the error kind) over the last hour.",
			size{12, 8},
			q(`sum by (collector, domain, result) (increase(tokendata_collector_runs_total{namespace="$namespace"}[1h]))`, "{{collector}}/{{domain}} {{result}}"))).
		WithPanel(series("Failures by kind",
			"Failed polls by collector and error kind over the last hour: upstream_unavailable, rate_limited, forbidden, invalid_response, rpc_error, enumeration_unsupported, node_unhealthy, store_error...",
			size{12, 8},
			q(`sum by (collector, result) (increase(tokendata_collector_runs_total{namespace="$namespace",result!="ok"}[1h]))`, "{{collector}} {{result}}"))).
		WithPanel(series("Since the last good poll",
			"Seconds since each domain was last written.",
			size{8, 8},
			q(`time() - max by (collector, domain) (tokendata_collector_last_success_timestamp_seconds{namespace="$namespace"})`, "{{collector}}/{{domain}}")).
			Unit("s")).
		WithPanel(series("Consecutive failures",
			"Failed polls since the last success, per domain.",
			size{8, 8},
			q(`max by (collector, domain) (tokendata_collector_consecutive_failures{namespace="$namespace"})`, "{{collector}}/{{domain}}"))).
		WithPanel(series("Poll duration",
			"Mean duration of a poll (retries included) over the last hour, per domain.",
			size{8, 8},
			q(`sum by (collector, domain) (increase(tokendata_collector_run_duration_seconds_sum{namespace="$namespace"}[1h])) / sum by (collector, domain) (increase(tokendata_collector_run_duration_seconds_count{namespace="$namespace"}[1h]))`, "{{collector}}/{{domain}}")).
			Unit("s")).
		WithRow(row("Upstreams")).
		WithPanel(series("Upstream requests by outcome",
			"Requests per second to each upstream, by method or endpoint and outcome (ok or the error kind).",
			size{8, 8},
			q(`sum by (upstream, method, outcome) (rate(tokendata_upstream_requests_total{namespace="$namespace"}[$__rate_interval]))`, "{{upstream}} {{method}} {{outcome}}")).
			Unit("reqps")).
		WithPanel(series("Upstream error ratio",
			"Share of upstream requests that failed, per upstream, over the last 15 minutes (retries make a failed request less than a failed poll).",
			size{8, 8},
			q(`(sum by (upstream) (increase(tokendata_upstream_requests_total{namespace="$namespace",outcome!="ok"}[15m])) or sum by (upstream) (increase(tokendata_upstream_requests_total{namespace="$namespace"}[15m])) * 0) / sum by (upstream) (increase(tokendata_upstream_requests_total{namespace="$namespace"}[15m]))`, "{{upstream}}")).
			Unit("percentunit").
			Min(0).
			Max(1)).
		WithPanel(series("Upstream latency p95",
			"95th percentile of upstream request latency, by upstream and method.",
			size{8, 8},
			q(`histogram_quantile(0.95, sum by (le, upstream, method) (rate(tokendata_upstream_request_duration_seconds_bucket{namespace="$namespace"}[$__rate_interval])))`, "{{upstream}} {{method}}")).
			Unit("s")).
		WithRow(row("Holders enumeration")).
		WithPanel(series("Accounts decoded",
			"Token accounts decoded so far by the enumeration in progress (0 when none runs), and the token accounts of the last successful one.",
			size{6, 8},
			q(`max(tokendata_holders_enumeration_accounts{namespace="$namespace"})`, "in progress"),
			q(`max(tokendata_holders_last_enumeration_accounts{namespace="$namespace"})`, "last enumeration"))).
		WithPanel(series("Enumeration rate",
			"Accounts per second of the enumeration in progress, or of the last one.",
			size{6, 8},
			q(`max(tokendata_holders_enumeration_accounts_per_second{namespace="$namespace"})`, "accounts/s"))).
		WithPanel(series("Holders",
			"Holders (unique owners with a positive balance) of the last successful enumeration.",
			size{6, 8},
			q(`max(tokendata_holders_last_enumeration_holders{namespace="$namespace"})`, "holders"))).
		WithPanel(series("Enumeration duration",
			"Duration of the last successful enumeration.",
			size{6, 8},
			q(`max(tokendata_holders_last_enumeration_duration_seconds{namespace="$namespace"})`, "duration")).
			Unit("s")).
		WithRow(row("Market")).
		WithPanel(series("Selected pair liquidity",
			"Liquidity in USD of the pair the price comes from.",
			size{12, 8},
			q(`max(tokendata_market_selected_pair_liquidity_usd{namespace="$namespace"})`, "liquidity")).
			Unit("currencyUSD")).
		WithPanel(series("Pairs by state",
			"Pairs of the last good poll: detected (every pair listed), kept (on solana with the token), usable (kept, with a positive price).",
			size{12, 8},
			q(`max by (state) (tokendata_market_pairs{namespace="$namespace"})`, "{{state}}"))).
		WithRow(row("Processes")).
		WithPanel(series("Memory (RSS)",
			"Resident memory of the collector processes (standalone: the whole process).",
			size{8, 8},
			q(`process_resident_memory_bytes{namespace="$namespace",job=~"tokendata-(supply|market|holders|standalone)"}`, "{{job}} {{instance}}")).
			Unit("bytes")).
		WithPanel(series("CPU",
			"CPU seconds per second of the collector processes.",
			size{8, 8},
			q(`rate(process_cpu_seconds_total{namespace="$namespace",job=~"tokendata-(supply|market|holders|standalone)"}[$__rate_interval])`, "{{job}} {{instance}}")).
			Unit("percentunit")).
		WithPanel(series("Go heap",
			"Heap in use of the collector processes (the holders enumeration keeps its owner set here).",
			size{8, 8},
			q(`go_memstats_heap_inuse_bytes{namespace="$namespace",job=~"tokendata-(supply|market|holders|standalone)"}`, "{{job}} {{instance}}")).
			Unit("bytes"))
}
