package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// api is tokendata-api.json: the public API (the edge).
func api() *dashboard.DashboardBuilder {
	return newDashboard("tokendata-api", "tokendata / API",
		"The public API (edge): traffic, errors, latency, the snapshot that serves it, and the age of the data it serves. Alerts: files/alerts/tokendata-rules.yaml; metrics: METRICS.md.",
		"30s", "now-6h").
		WithRow(row("Now")).
		WithPanel(statPanel("Requests",
			"Public API requests per second, every route and status.",
			size{4, 5},
			q(`sum(rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`, "req/s")).
			Unit("reqps").
			Thresholds(thresholds("blue")).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("5xx ratio",
			"Share of answers that are 5xx (503: a domain missing; 500: internal). TokendataEdgeErrors fires above 5 % for 10 minutes.",
			size{4, 5},
			q(`(sum(rate(tokendata_edge_http_requests_total{namespace="$namespace",code=~"5.."}[$__rate_interval])) or vector(0)) / sum(rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`, "5xx")).
			Unit("percentunit").
			Thresholds(thresholds("green", at(0.01, "orange"), at(0.05, "red"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Latency p99",
			"99th percentile of the time to answer, matched routes. TokendataEdgeLatencyHigh fires above 250 ms.",
			size{4, 5},
			q(`histogram_quantile(0.99, sum by (le) (rate(tokendata_edge_http_request_duration_seconds_bucket{namespace="$namespace",route!="unmatched"}[$__rate_interval])))`, "p99")).
			Unit("s").
			Thresholds(thresholds("green", at(0.05, "orange"), at(0.25, "red"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Edges ready",
			"Edge processes ready to serve (they have a snapshot and are not draining), of those scraped.",
			size{4, 5},
			q(`sum(tokendata_edge_ready{namespace="$namespace"})`, "ready"),
			q(`count(tokendata_edge_ready{namespace="$namespace"})`, "edges")).
			Thresholds(thresholds("blue")).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Redis",
			"Whether every edge's last read of the store succeeded. TokendataRedisUnreachable fires after 2 minutes down.",
			size{4, 5},
			q(`min(tokendata_edge_store_up{namespace="$namespace"})`, "store")).
			Thresholds(thresholds("red", at(1, "green"))).
			Mappings(states(state{"0", "unreachable", "red"}, state{"1", "reachable", "green"})).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(tablePanel("Builds",
			"Running builds: service, version, commit, Go version and how many processes run each.",
			size{4, 5},
			q(`count by (service, version, commit, goversion) (tokendata_build_info{namespace="$namespace"})`, "").Instant().Format(prometheus.PromQueryFormatTable)).
			WithTransformation(withoutTime)).
		WithPanel(statPanel("Data age by domain",
			"Age of each domain's document as the edge serves it (-1: the edge has none, its endpoints answer 503). Stale after: market 180 s, supply 900 s, holders 1 h, metadata 1 day (defaults).",
			size{16, 5},
			q(`max by (domain) (tokendata_edge_data_age_seconds{namespace="$namespace"})`, "{{domain}}")).
			Unit("s").
			Thresholds(thresholds("red", at(0, "green"), at(180, "orange"), at(86400, "red"))).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(statPanel("Stale domains",
			"Domains served past their stale-after (responses say \"stale\": true); -1: missing. TokendataDataStale fires after 5 minutes.",
			size{8, 5},
			q(`max by (domain) (tokendata_edge_data_stale{namespace="$namespace"})`, "{{domain}}")).
			Thresholds(thresholds("red", at(0, "green"), at(1, "orange"))).
			Mappings(states(state{"-1", "missing", "red"}, state{"0", "fresh", "green"}, state{"1", "stale", "orange"})).
			ColorMode(common.BigValueColorModeBackground)).
		WithRow(row("Traffic")).
		WithPanel(series("Requests by route",
			"Requests per second by route template (\"unmatched\": no route, answered 404).",
			size{12, 8},
			q(`sum by (route) (rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`, "{{route}}")).
			Unit("reqps")).
		WithPanel(series("Responses by status code",
			"Answers per second by status code: 200, 304 (conditional hits), 404/405, 503 (data missing), 500.",
			size{12, 8},
			q(`sum by (code) (rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`, "{{code}}")).
			Unit("reqps")).
		WithPanel(series("Errors by route and code",
			"4xx and 5xx answers per second, by route template and code.",
			size{12, 8},
			q(`sum by (route, code) (rate(tokendata_edge_http_requests_total{namespace="$namespace",code=~"[45].."}[$__rate_interval]))`, "{{route}} {{code}}")).
			Unit("reqps")).
		WithPanel(series("Response bytes by route",
			"Body bytes written per second, by route template.",
			size{12, 8},
			q(`sum by (route) (rate(tokendata_edge_http_response_bytes_total{namespace="$namespace"}[$__rate_interval]))`, "{{route}}")).
			Unit("Bps")).
		WithRow(row("Latency")).
		WithPanel(series("Latency percentiles",
			"Time to answer, matched routes: p50, p90, p99.",
			size{12, 8},
			q(`histogram_quantile(0.5, sum by (le) (rate(tokendata_edge_http_request_duration_seconds_bucket{namespace="$namespace",route!="unmatched"}[$__rate_interval])))`, "p50"),
			q(`histogram_quantile(0.9, sum by (le) (rate(tokendata_edge_http_request_duration_seconds_bucket{namespace="$namespace",route!="unmatched"}[$__rate_interval])))`, "p90"),
			q(`histogram_quantile(0.99, sum by (le) (rate(tokendata_edge_http_request_duration_seconds_bucket{namespace="$namespace",route!="unmatched"}[$__rate_interval])))`, "p99")).
			Unit("s")).
		WithPanel(series("Latency p99 by route",
			"99th percentile of the time to answer, by route template.",
			size{12, 8},
			q(`histogram_quantile(0.99, sum by (le, route) (rate(tokendata_edge_http_request_duration_seconds_bucket{namespace="$namespace"}[$__rate_interval])))`, "{{route}}")).
			Unit("s")).
		WithRow(row("Cache behaviour")).
		WithPanel(series("Conditional hits (304)",
			"Share of GET answers that are 304 Not Modified: clients and the cache tier revalidating with If-None-Match instead of downloading again.",
			size{8, 8},
			q(`sum(rate(tokendata_edge_http_requests_total{namespace="$namespace",code="304"}[$__rate_interval])) / sum(rate(tokendata_edge_http_requests_total{namespace="$namespace",method="GET"}[$__rate_interval]))`, "304 / GET")).
			Unit("percentunit")).
		WithPanel(series("Snapshot refreshes and renders",
			"Reads of the store into the edge's snapshot by result, and rebuilds of the pre-rendered bodies (data changed, or a domain crossed stale-after or its TTL).",
			size{8, 8},
			q(`sum by (result) (rate(tokendata_edge_snapshot_refreshes_total{namespace="$namespace"}[$__rate_interval]))`, "refresh {{result}}"),
			q(`sum(rate(tokendata_edge_snapshot_renders_total{namespace="$namespace"}[$__rate_interval]))`, "render")).
			Unit("ops")).
		WithPanel(series("Store errors and panics",
			"Failed reads of the store (Redis unreachable, timeout) and handler panics recovered into a 500.",
			size{8, 8},
			q(`sum(rate(tokendata_edge_store_errors_total{namespace="$namespace"}[$__rate_interval]))`, "store errors"),
			q(`sum(rate(tokendata_edge_http_panics_total{namespace="$namespace"}[$__rate_interval]))`, "panics")).
			Unit("ops")).
		WithRow(row("Data freshness")).
		WithPanel(series("Data age by domain",
			"Age of each domain's document in the edge's snapshot (-1: none).",
			size{12, 8},
			q(`max by (domain) (tokendata_edge_data_age_seconds{namespace="$namespace"})`, "{{domain}}")).
			Unit("s")).
		WithPanel(series("Stale flag by domain",
			"1: served past stale-after; 0: fresh; -1: missing.",
			size{12, 8},
			q(`max by (domain) (tokendata_edge_data_stale{namespace="$namespace"})`, "{{domain}}")).
			Min(-1).
			Max(1)).
		WithRow(row("Processes")).
		WithPanel(series("Memory (RSS)",
			"Resident memory of the edge processes (standalone: the whole process).",
			size{8, 8},
			q(`process_resident_memory_bytes{namespace="$namespace",job=~"tokendata-(edge|standalone)"}`, "{{job}} {{instance}}")).
			Unit("bytes")).
		WithPanel(series("CPU",
			"CPU seconds per second of the edge processes.",
			size{8, 8},
			q(`rate(process_cpu_seconds_total{namespace="$namespace",job=~"tokendata-(edge|standalone)"}[$__rate_interval])`, "{{job}} {{instance}}")).
			Unit("percentunit")).
		WithPanel(series("Goroutines",
			"Goroutines of the edge processes.",
			size{8, 8},
			q(`go_goroutines{namespace="$namespace",job=~"tokendata-(edge|standalone)"}`, "{{job}} {{instance}}"))).
		WithRow(row("Live events")).
		WithPanel(series("Event streams open",
			"Streams of /api/events open on each edge, against EDGE_MAX_EVENT_STREAMS, and those waiting on a goroutine of their own for a client whose socket is full.",
			size{8, 8},
			q(`tokendata_edge_event_streams_open{namespace="$namespace",job=~"tokendata-(edge|standalone)"}`, "{{instance}} open"),
			q(`tokendata_edge_event_streams_max{namespace="$namespace",job=~"tokendata-(edge|standalone)"}`, "{{instance}} max"),
			q(`tokendata_edge_event_streams_waiting{namespace="$namespace",job=~"tokendata-(edge|standalone)"}`, "{{instance}} waiting for a slow client"))).
		WithPanel(series("Event fan-out p99",
			"Time from an event's publication to its write to a subscriber, 99th percentile over all edges.",
			size{8, 8},
			q(`histogram_quantile(0.99, sum by (le) (rate(tokendata_edge_event_fanout_seconds_bucket{namespace="$namespace",job=~"tokendata-(edge|standalone)"}[5m])))`, "p99")).
			Unit("s")).
		WithPanel(series("Events and stream ends",
			"Events published by name, and streams ended by reason (slow: dropped subscribers; refused: past EDGE_MAX_EVENT_STREAMS).",
			size{8, 8},
			q(`sum by (event) (rate(tokendata_edge_events_published_total{namespace="$namespace",job=~"tokendata-(edge|standalone)"}[5m]))`, "published {{event}}"),
			q(`sum by (reason) (rate(tokendata_edge_event_streams_ended_total{namespace="$namespace",job=~"tokendata-(edge|standalone)"}[5m]))`, "ended {{reason}}")).
			Unit("ops"))
}
