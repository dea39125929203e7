package chartcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// The monitoring the chart ships, checked offline (lint, promtool, the
// render) and live: a real Prometheus (Debian's) scrapes running
// standalone processes and evaluates the rules; every dashboard query and
// every alert expression must find the series it selects, and METRICS.md
// must list exactly the metrics the processes export.

const (
	rulesFile     = "files/alerts/tokendata-rules.yaml"
	rulesTestFile = "files/alerts/tokendata-rules.test.yaml"
	metricsDoc    = "METRICS.md"
	// liveNamespace and liveJob are the labels the live test's scrape
	// config gives the targets, as the chart's ServiceMonitor would.
	liveNamespace = "tokendata"
	liveJob       = "tokendata-standalone"
)

func chartFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chart.Dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dashboards reads every committed dashboard, by file name.
func dashboards(t *testing.T) map[string]Dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart.Dir, "files", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards under files/dashboards: %v", err)
	}
	out := map[string]Dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := LoadDashboard(b)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

func rules(t *testing.T) RuleFile {
	t.Helper()
	f, err := LoadRules(chartFile(t, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// findTool finds a binary on PATH or in the Debian package's place.
func findTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/bin/" + name; fileExists(p) {
		return p
	}
	t.Fatalf("%s not found: run hack/install-chart-deps.sh (Debian's prometheus package)", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestDashboards(t *testing.T) {
	ds := dashboards(t)
	uids := map[string]string{}
	for file, d := range ds {
		if err := d.Lint(); err != nil {
			t.Errorf("%s:\n%v", file, err)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", file, other, d.UID)
		}
		uids[d.UID] = file
		if want := strings.TrimSuffix(file, ".json"); d.UID != want {
			t.Errorf("%s: uid %q, want the file's name %q (stable links between dashboards)", file, d.UID, want)
		}
	}
	// The dashboards the chart ships, and what each must show.
	musts := map[string][]string{
		"tokendata-api.json": {"tokendata_edge_http_requests_total", "tokendata_edge_http_request_duration_seconds_bucket",
			"tokendata_edge_http_response_bytes_total", "tokendata_edge_data_age_seconds", "tokendata_edge_data_stale",
			"tokendata_edge_snapshot_refreshes_total", "tokendata_edge_store_errors_total", "tokendata_edge_store_up", "tokendata_edge_ready"},
		"tokendata-collectors.json": {"tokendata_collector_runs_total", "tokendata_collector_last_success_timestamp_seconds",
			"tokendata_collector_consecutive_failures", "tokendata_upstream_requests_total", "tokendata_upstream_request_duration_seconds_bucket",
			"tokendata_holders_enumeration_accounts", "tokendata_holders_last_enumeration_holders", "tokendata_holders_enumeration_unsupported",
			"tokendata_market_selected_pair_liquidity_usd"},
		"tokendata-token.json": {"tokendata_token_price_usd", "tokendata_token_market_cap_usd", "tokendata_token_fdv_usd",
			"tokendata_token_liquidity_usd", "tokendata_token_volume_24h_usd", "tokendata_token_supply_total",
			"tokendata_token_holders", "tokendata_token_updated_timestamp_seconds"},
	}
	for file, metrics := range musts {
		d, ok := ds[file]
		if !ok {
			t.Errorf("files/dashboards/%s is missing", file)
			continue
		}
		var all strings.Builder
		for _, q := range d.Queries() {
			all.WriteString(q.Expr + "\n")
		}
		for _, m := range metrics {
			if !strings.Contains(all.String(), m) {
				t.Errorf("%s shows no %s", file, m)
			}
		}
	}
}

// TestDashboardLintCatches proves the lint fails where it must.
func TestDashboardLintCatches(t *testing.T) {
	ds := `{"type":"prometheus","uid":"${datasource}"}`
	panel := func(expr string, datasource string) string {
		return `{"uid":"x","title":"x","panels":[{"id":1,"type":"timeseries","title":"p","gridPos":{"h":1},"datasource":` + datasource +
			`,"targets":[{"refId":"A","datasource":` + datasource + `,"expr":` + strconvQuote(expr) + `}]}]}`
	}
	good := panel(`sum(rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`, ds)
	d, err := LoadDashboard([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Lint(); err != nil {
		t.Fatalf("a valid dashboard is refused: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown variable":          panel(`up{pod="$pod"}`, ds),
		"PromQL error":              panel(`sum(rate(up[5m])`, ds),
		"no metric":                 panel(`vector(1)`, ds),
		"fixed datasource":          panel(`up`, `{"type":"prometheus","uid":"P1809F7CD0C75ACF3"}`),
		"duplicate panel id":        `{"uid":"x","title":"x","panels":[{"id":1,"type":"row","title":"a","gridPos":{}},{"id":1,"type":"row","title":"b","gridPos":{}}]}`,
		"unknown template variable": `{"uid":"x","title":"x","templating":{"list":[{"name":"pod","type":"query"}]},"panels":[]}`,
	} {
		d, err := LoadDashboard([]byte(bad))
		if err == nil {
			err = d.Lint()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAlertRules runs promtool on the very file the chart ships (check,
// then the unit tests beside it) and the house rules of every alert.
func TestAlertRules(t *testing.T) {
	f := rules(t)
	if err := f.Lint(); err != nil {
		t.Error(err)
	}
	names := map[string]bool{}
	for _, r := range f.Alerts() {
		names[r.Alert] = true
	}
	// The alerts the chart must ship, at least.
	for _, want := range []string{"TokendataDataStale", "TokendataDataMissing", "TokendataCollectorFailing", "TokendataHoldersUnavailable",
		"TokendataEdgeErrors", "TokendataEdgeLatencyHigh", "TokendataRedisUnreachable", "TokendataTargetDown"} {
		if !names[want] {
			t.Errorf("no alert %s", want)
		}
	}
	promtool := findTool(t, "promtool")
	dir := filepath.Join(chart.Dir, "files", "alerts")
	for _, args := range [][]string{{"check", "rules", filepath.Base(rulesFile)}, {"test", "rules", filepath.Base(rulesTestFile)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert has unit tests.
	tests := string(chartFile(t, rulesTestFile))
	for name := range names {
		if !strings.Contains(tests, "alertname: "+name+"\n") {
			t.Errorf("%s has no promtool unit test in %s", name, rulesTestFile)
		}
	}
}

// TestAlertRunbooks: every alert's runbook_url lands on a section of
// docs/operations.md of its own name, and that section says what the
// alert means, where to look and what fixes it; no section is left for an
// alert that no longer exists.
func TestAlertRunbooks(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // anchor → text
	var anchor string
	for _, l := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(l, "#") {
			anchor = ""
			if name, ok := strings.CutPrefix(l, "### Tokendata"); ok {
				anchor = RunbookAnchor("Tokendata" + name)
			}
			continue
		}
		if anchor != "" {
			sections[anchor] += l + "\n"
		}
	}
	alerts := rules(t).Alerts()
	for _, r := range alerts {
		a := RunbookAnchor(r.Alert)
		text, ok := sections[a]
		switch {
		case r.Annotations["runbook_url"] != RunbookBase+a:
			t.Errorf("%s: runbook_url %q", r.Alert, r.Annotations["runbook_url"])
		case !ok:
			t.Errorf("%s: no section ### %s in docs/operations.md", r.Alert, r.Alert)
		default:
			for _, part := range []string{"**Means:**", "**Look at:**", "**Fix:**"} {
				if !strings.Contains(text, part) {
					t.Errorf("docs/operations.md, %s: no %s", r.Alert, part)
				}
			}
		}
		delete(sections, a)
	}
	for a := range sections {
		t.Errorf("docs/operations.md has a runbook (#%s) for no alert", a)
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts read")
	}
}

// TestAlertLintCatches proves the rules lint fails where it must.
func TestAlertLintCatches(t *testing.T) {
	good := `groups:
- name: g
  rules:
  - alert: TokendataXy
    expr: up == 0
    for: 5m
    labels: {severity: warning}
    annotations: {summary: s, description: d, runbook_url: "https://github.com/tokendata/tokendata/blob/main/docs/operations.md#tokendataxy"}
`
	f, err := LoadRules([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Lint(); err != nil {
		t.Fatalf("a valid rules file is refused: %v", err)
	}
	for name, bad := range map[string]string{
		"no for":           strings.Replace(good, "    for: 5m\n", "", 1),
		"unknown severity": strings.Replace(good, "severity: warning", "severity: page", 1),
		"no runbook":       strings.Replace(good, ", runbook_url:", ", runbook:", 1),
		"another runbook":  strings.Replace(good, "#tokendataxy", "#tokendatadatastale", 1),
		"bad PromQL":       strings.Replace(good, "up == 0", "up ==", 1),
		"bad name":         strings.Replace(good, "TokendataXy", "x", 1),
		"unknown key":      strings.Replace(good, "    for: 5m\n", "    for: 5m\n    fro: 5m\n", 1),
		"recording rule":   strings.Replace(good, "alert: TokendataXy", "record: x:y", 1),
	} {
		f, err := LoadRules([]byte(bad))
		if err == nil {
			err = f.Lint()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPrometheusRuleRender: the PrometheusRule carries the rules file's
// groups unchanged, minus the alerts monitoring.prometheusRule.disabled
// names.
func TestPrometheusRuleRender(t *testing.T) {
	want := rules(t)
	groupsOf := func(t *testing.T, args ...string) []RuleGroup {
		t.Helper()
		s := render(t, append([]string{"--set", "monitoring.prometheusRule.enabled=true"}, args...)...)
		o, ok := s.Get("PrometheusRule", "t-tokendata")
		if !ok {
			t.Fatal("no PrometheusRule")
		}
		if _, ok := o.Typed.(*monitoringv1.PrometheusRule); !ok {
			t.Fatalf("PrometheusRule decoded as %T", o.Typed)
		}
		spec, err := json.Marshal(o.U.Object["spec"])
		if err != nil {
			t.Fatal(err)
		}
		var got RuleFile
		if err := json.Unmarshal(spec, &got); err != nil {
			t.Fatal(err)
		}
		return got.Groups
	}
	if got := groupsOf(t); !jsonEqual(got, want.Groups) {
		t.Errorf("the PrometheusRule's groups differ from %s:\n got %s\nwant %s", rulesFile, mustJSON(got), mustJSON(want.Groups))
	}
	got := groupsOf(t, "--set", "monitoring.prometheusRule.disabled={TokendataEdgeLatencyHigh,TokendataTargetDown}")
	var left []string
	for _, g := range got {
		for _, r := range g.Rules {
			left = append(left, r.Alert)
		}
	}
	if len(left) != len(want.Alerts())-2 || slices.Contains(left, "TokendataEdgeLatencyHigh") || slices.Contains(left, "TokendataTargetDown") {
		t.Errorf("with two alerts disabled the rule has %v", left)
	}
	if _, err := chart.Template("--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.prometheusRule.disabled={notAnAlert}"); err == nil {
		t.Error("a disabled entry that is no alert name passes the schema")
	}

	// monitoring.prometheusRule.for: the named alerts' durations, the
	// others' unchanged.
	got = groupsOf(t, "--set", "monitoring.prometheusRule.for.TokendataDataStale=15m", "--set", "monitoring.prometheusRule.for.TokendataTargetDown=30s")
	for gi, g := range got {
		for ri, r := range g.Rules {
			wantFor := want.Groups[gi].Rules[ri].For
			switch r.Alert {
			case "TokendataDataStale":
				wantFor = "15m"
			case "TokendataTargetDown":
				wantFor = "30s"
			}
			if r.For != wantFor {
				t.Errorf("%s for %q, want %q", r.Alert, r.For, wantFor)
			}
		}
	}
	for _, bad := range [][]string{
		{"monitoring.prometheusRule.for.TokendataDataStale=soon"},
		{"monitoring.prometheusRule.for.TokendataDataStale=5"},
		{"monitoring.prometheusRule.for.notAnAlert=5m"},
		{"monitoring.prometheusRule.for.TokendataNoSuchAlert=5m"},
		{"monitoring.prometheusRule.disabled={TokendataNoSuchAlert}"},
	} {
		args := []string{"--set", "monitoring.prometheusRule.enabled=true"}
		for _, b := range bad {
			args = append(args, "--set", b)
		}
		if _, err := chart.Template(args...); err == nil {
			t.Errorf("%v renders", bad)
		} else if strings.Contains(bad[0], "TokendataNoSuchAlert") && !strings.Contains(err.Error(), "TokendataNoSuchAlert is no alert") {
			t.Errorf("%v: %v, want the name said", bad, err)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func jsonEqual(a, b any) bool { return mustJSON(a) == mustJSON(b) }

// TestServiceMonitorJob: the ServiceMonitor names every job
// tokendata-<component>, which the alerts and dashboards select on.
func TestServiceMonitorJob(t *testing.T) {
	s := render(t, "--set", "monitoring.serviceMonitor.enabled=true")
	o, ok := s.Get("ServiceMonitor", "t-tokendata")
	if !ok {
		t.Fatal("no ServiceMonitor")
	}
	sm := o.Typed.(*monitoringv1.ServiceMonitor)
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints", len(sm.Spec.Endpoints))
	}
	found := false
	for _, r := range sm.Spec.Endpoints[0].RelabelConfigs {
		if r.TargetLabel == "job" && r.Replacement != nil && *r.Replacement == "tokendata-$1" &&
			slices.Equal(r.SourceLabels, []monitoringv1.LabelName{"__meta_kubernetes_service_label_app_kubernetes_io_component"}) {
			found = true
		}
	}
	if !found {
		t.Errorf("no relabeling to job=tokendata-<component>: %+v", sm.Spec.Endpoints[0].RelabelConfigs)
	}
	for _, r := range rules(t).Alerts() {
		if strings.Contains(r.Expr, "job=") && !strings.Contains(r.Expr, `job=~"tokendata-`) {
			t.Errorf("alert %s selects a job the ServiceMonitor does not name", r.Alert)
		}
	}
}

// TestMonitoringLive runs the whole thing: two standalone processes (one
// in demo mode, healthy; one whose holders RPC refuses to enumerate),
// traffic on both APIs (200, 304, 404, 405, 503), and Debian's prometheus
// scraping them every second with the chart's rules loaded. Then: every
// vector selector of every dashboard query and every alert finds series,
// every dashboard query returns data, every rule evaluates without error;
// and METRICS.md lists exactly the metrics the processes export.
func TestMonitoringLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the live monitoring test runs standalone and prometheus")
	}
	promBin := findTool(t, "prometheus")
	bin := buildStandalone(t)

	healthy := runStandalone(t, bin, "demo", nil)
	sim := simulate(t, bin)
	refusing := refusingRPC(t, sim["SOLANA_RPC_URL"], "getProgramAccounts")
	faulty := runStandalone(t, bin, "holders refused", []string{
		"TOKEN_MINT=" + sim["TOKEN_MINT"], "TOKEN_MAX_SUPPLY=" + sim["TOKEN_MAX_SUPPLY"], "SOLANA_RPC_URL=" + refusing,
		"DEXSCREENER_URL=" + sim["DEXSCREENER_URL"], "GECKOTERMINAL_URL=" + sim["GECKOTERMINAL_URL"],
		"HOLDERS_REFRESH=2s",
	})
	waitStatus(t, faulty.api+"/api/holders", http.StatusServiceUnavailable)

	since := time.Now()
	prom := startPrometheus(t, promBin, healthy.ops, faulty.ops)
	for _, s := range []*standalone{healthy, faulty} {
		traffic(t, s.api)
	}

	queries, labelValues, alerts := liveQueries(t, liveNamespace)

	// Poll until everything holds (scrapes every second, rules evaluated
	// every second), or report what still does not after the deadline.
	var problems []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		problems = prom.check(since, queries, labelValues, len(alerts), nil)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d dashboard and alert queries checked against live series", len(queries))

	t.Run("METRICS.md lists every metric", func(t *testing.T) {
		var sets []map[string]MetricDoc
		for _, s := range []*standalone{healthy, faulty} {
			b, err := get(s.ops + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseMetrics(b)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, m)
		}
		all, err := MergeMetrics(sets...)
		if err != nil {
			t.Fatal(err)
		}
		checkMetricsDoc(t, all, rules(t))
	})
}

// liveQueries is what a live check runs against a Prometheus: every
// dashboard query with $namespace set to namespace, then every alert's
// expression; the label_values() variables of the dashboards (metric,
// label); and the alerts.
func liveQueries(t *testing.T, namespace string) (queries []Query, labelValues [][2]string, alerts []Rule) {
	t.Helper()
	for _, d := range dashboards(t) {
		for _, q := range d.Queries() {
			expr, err := Substitute(q.Expr, map[string]string{"namespace": namespace, "__rate_interval": "1m"})
			if err != nil {
				t.Fatalf("%s: %v", q.Where, err)
			}
			queries = append(queries, Query{Where: "dashboard " + q.Where, Expr: expr})
		}
		for _, v := range d.Templating.List {
			if m := labelValuesRE.FindStringSubmatch(v.QueryText()); m != nil {
				labelValues = append(labelValues, [2]string{m[1], m[2]})
			}
		}
	}
	alerts = rules(t).Alerts()
	for _, r := range alerts {
		queries = append(queries, Query{Where: "alert " + r.Alert, Expr: r.Expr})
	}
	return queries, labelValues, alerts
}

var labelValuesRE = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// checkMetricsDoc compares METRICS.md's generated sections with the live
// metrics and the rules; -update rewrites them.
func checkMetricsDoc(t *testing.T, metrics map[string]MetricDoc, f RuleFile) {
	t.Helper()
	path := filepath.Join(chart.Dir, metricsDoc)
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ReplaceSection(string(old), "METRICS", MetricsTable(metrics))
	if err == nil {
		doc, err = ReplaceSection(doc, "ALERTS", AlertsTable(f))
	}
	if err != nil {
		t.Fatalf("%s: %v", metricsDoc, err)
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc == string(old) {
		return
	}
	// Name what differs: a metric missing, one that no longer exists, or
	// a changed line.
	have := map[string]bool{}
	for _, l := range strings.Split(string(old), "\n") {
		have[l] = true
	}
	want := map[string]bool{}
	for _, l := range strings.Split(doc, "\n") {
		want[l] = true
		if !have[l] {
			t.Errorf("%s lacks: %s", metricsDoc, l)
		}
	}
	for _, l := range strings.Split(string(old), "\n") {
		if !want[l] {
			t.Errorf("%s has, but the code does not: %s", metricsDoc, l)
		}
	}
	t.Errorf("%s differs from the metrics the processes export (run go test -run TestMonitoringLive -update and review the diff)", metricsDoc)
}

// standalone is a running standalone process.
type standalone struct {
	*process
	api, ops string
}

// buildStandalone builds services/standalone once per test.
func buildStandalone(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "standalone")
	// the image builds' flags (hack/imagebuild): their compiled packages
	// are shared through Go's build cache
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/standalone")
	build.Dir = filepath.Join(root, "services", "standalone")
	build.Env = append(withoutEnv(os.Environ(), "GOWORK"), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build standalone: %v\n%s", err, out)
	}
	return bin
}

// standaloneEnv are the variables the live test sets itself.
var standaloneEnv = []string{"TOKEN_CONFIG", "TOKEN_MINT", "TOKEN_MAX_SUPPLY", "REDIS_URL", "HTTP_ADDR", "OPS_ADDR", "DRAIN_DELAY", "LOG_LEVEL",
	"SOLANA_RPC_URL", "SOLANA_RPC_URLS", "SOLANA_WS_URLS", "HOLDERS_RPC_URL", "HOLDERS_METHOD", "DEXSCREENER_URL", "GECKOTERMINAL_URL",
	"SUPPLY_REFRESH", "MARKET_REFRESH", "HOLDERS_REFRESH", "METADATA_REFRESH"}

// runStandalone starts bin with short refreshes on free loopback ports and
// waits until it answers /api/price.
func runStandalone(t *testing.T, bin, name string, env []string) *standalone {
	t.Helper()
	httpAddr, opsAddr := freeport.Addr(t), freeport.Addr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(append(withoutEnv(os.Environ(), standaloneEnv...),
		"HTTP_ADDR="+httpAddr, "OPS_ADDR="+opsAddr, "DRAIN_DELAY=0s", "LOG_LEVEL=warn", "MARKET_REFRESH=2s"), env...)
	s := &standalone{process: start(t, cmd), api: "http://" + httpAddr, ops: "http://" + opsAddr}
	t.Logf("standalone (%s): API %s, ops %s", name, s.api, s.ops)
	waitStatus(t, s.api+"/api/price", http.StatusOK)
	return s
}

// waitStatus waits until u answers status.
func waitStatus(t *testing.T, u string, status int) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second, Transport: noKeepAlive}
	deadline := time.Now().Add(60 * time.Second)
	last := 0
	for time.Now().Before(deadline) {
		if resp, err := c.Get(u); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if last = resp.StatusCode; last == status {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s does not answer %d within 60 s (last %d)", u, status, last)
}

// simulate runs `standalone simulate` with args and returns the variables
// it prints.
func simulate(t *testing.T, bin string, args ...string) map[string]string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"simulate"}, args...)...)
	cmd.Env = withoutEnv(os.Environ(), standaloneEnv...)
	p := start(t, cmd)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		vars := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(p.out.String()))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.ToUpper(k) == k {
				vars[k] = v
			}
		}
		if vars["GECKOTERMINAL_URL"] != "" && vars["SOLANA_RPC_URL"] != "" {
			return vars
		}
		select {
		case err := <-p.done:
			t.Fatalf("standalone simulate exited: %v\n%s", err, p.out.String())
		default:
		}
	}
	t.Fatalf("standalone simulate printed no URLs:\n%s", p.out.String())
	return nil
}

// refusingRPC is a proxy to the simulated RPC node that answers 403 to
// one JSON-RPC method, as a node that does not serve it: the holders
// collector then reports enumeration_unsupported and the API answers 503.
func refusingRPC(t *testing.T, target, method string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = noKeepAlive
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var req struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == method {
			http.Error(w, "method not served by this node", http.StatusForbidden)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("refusing proxy: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return "http://" + l.Addr().String()
}

// traffic sends the API a mix: 200s on every data route, a 304, a 404, a
// 405 and whatever the domains answer.
func traffic(t *testing.T, api string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: noKeepAlive}
	do := func(method, path string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, api+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	for range 3 {
		for _, p := range []string{"/api/total-supply", "/api/supply", "/api/price", "/api/market", "/api/market-data",
			"/api/holders", "/api/token-metadata", "/api/health", "/api/status", "/api/market-pairs", "/api/coingecko-supply"} {
			do(http.MethodGet, p)
		}
		do(http.MethodGet, "/api/no-such-route")
		do(http.MethodPost, "/api/price")
		if etag := do(http.MethodGet, "/api/supply").Header.Get("ETag"); etag != "" {
			if r := do(http.MethodGet, "/api/supply", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
				t.Errorf("GET /api/supply with If-None-Match: %d, want 304", r.StatusCode)
			}
		} else {
			t.Error("GET /api/supply: no ETag")
		}
	}
}

// noKeepAlive leaves no idle connection (nor its goroutines) behind.
var noKeepAlive = &http.Transport{DisableKeepAlives: true}

func get(u string) ([]byte, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: noKeepAlive}
	resp, err := c.Get(u)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, err
}

// prometheus is a running prometheus server.
type prometheus struct {
	*process
	base string
}

// startPrometheus runs Debian's prometheus on a free loopback port with a
// temporary TSDB, scraping the ops ports every second with the labels the
// chart's ServiceMonitor gives (job tokendata-<component>, namespace),
// and evaluating the chart's rules file every second.
func startPrometheus(t *testing.T, bin string, targets ...string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	var hosts []string
	for _, u := range targets {
		hosts = append(hosts, strconvQuote(strings.TrimPrefix(u, "http://")))
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%s]
        labels:
          namespace: %s
`, strconvQuote(filepath.Join(chart.Dir, rulesFile)), liveJob, strings.Join(hosts, ", "), liveNamespace)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(findTool(t, "promtool"), "check", "config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	addr := freeport.Addr(t)
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p := &prometheus{process: start(t, cmd), base: "http://" + addr}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := get(p.base + "/-/ready"); err == nil {
			return p
		}
		select {
		case err := <-p.done:
			t.Fatalf("prometheus exited: %v\n%s", err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s", addr)
		}
	}
}

// api calls the Prometheus HTTP API and decodes data.
func (p *prometheus) api(path string, params url.Values, data any) error {
	b, err := get(p.base + path + "?" + params.Encode())
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if jerr := json.Unmarshal(b, &env); jerr != nil {
		return errors.Join(err, jerr)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, params.Encode(), env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// series returns the label sets of the series matching a selector since
// start.
func (p *prometheus) series(selector string, start time.Time) ([]map[string]string, error) {
	var out []map[string]string
	err := p.api("/api/v1/series", url.Values{"match[]": {selector}, "start": {fmt.Sprint(start.Unix() - 1)}}, &out)
	return out, err
}

// check returns what does not hold yet: a target down, a selector without
// series, a dashboard query without data, an expression Prometheus
// refuses, a rule not evaluated or in error.
// A selector for which exempt is true may find no series, and a dashboard
// query holding one may return no data (nil: none may).
func (p *prometheus) check(start time.Time, queries []Query, labelValues [][2]string, alerts int, exempt func(selector string) bool) []string {
	var problems []string
	var targets struct {
		ActiveTargets []struct {
			ScrapeURL string `json:"scrapeUrl"`
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := p.api("/api/v1/targets", nil, &targets); err != nil {
		return []string{err.Error()}
	}
	for _, tg := range targets.ActiveTargets {
		if tg.Health != "up" {
			problems = append(problems, fmt.Sprintf("target %s: %s %s", tg.ScrapeURL, tg.Health, tg.LastError))
		}
	}
	for _, q := range queries {
		sels, err := Selectors(q.Expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", q.Where, err))
			continue
		}
		exempted := false
		for _, s := range sels {
			if exempt != nil && exempt(s) {
				exempted = true
				continue
			}
			got, err := p.series(s, start)
			if err != nil || len(got) == 0 {
				problems = append(problems, fmt.Sprintf("%s: selector %s finds no series (%v) in: %s", q.Where, s, err, q.Expr))
			}
		}
		var res struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		}
		if err := p.api("/api/v1/query", url.Values{"query": {q.Expr}}, &res); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", q.Where, err))
		} else if strings.HasPrefix(q.Where, "dashboard ") && len(res.Result) == 0 && !exempted {
			problems = append(problems, fmt.Sprintf("%s: no data: %s", q.Where, q.Expr))
		}
	}
	for _, lv := range labelValues {
		got, err := p.series(lv[0], start)
		found := false
		for _, s := range got {
			found = found || s[lv[1]] != ""
		}
		if !found {
			problems = append(problems, fmt.Sprintf("variable label_values(%s, %s): no series with the label (%v)", lv[0], lv[1], err))
		}
	}
	var rulesData struct {
		Groups []struct {
			Rules []struct {
				Name           string    `json:"name"`
				Health         string    `json:"health"`
				LastError      string    `json:"lastError"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.api("/api/v1/rules", url.Values{"type": {"alert"}}, &rulesData); err != nil {
		return append(problems, err.Error())
	}
	n := 0
	for _, g := range rulesData.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" || r.LastEvaluation.Before(start) {
				problems = append(problems, fmt.Sprintf("alert %s: health %q, last evaluated %s %s", r.Name, r.Health, r.LastEvaluation, r.LastError))
			}
		}
	}
	if n != alerts {
		problems = append(problems, fmt.Sprintf("prometheus loaded %d alerting rules, the file has %d", n, alerts))
	}
	return problems
}

// FuzzSelectors: no expression crashes the PromQL extraction or the
// variable substitution.
func FuzzSelectors(f *testing.F) {
	f.Add(`sum by (route) (rate(tokendata_edge_http_requests_total{namespace="$namespace"}[$__rate_interval]))`)
	f.Add(`histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m]))) > 0.25 and on (namespace) y`)
	f.Add(`up{job=~"tokendata-.+"} == 0`)
	f.Add(`${namespace:raw} $ $$ ${`)
	f.Add(`sum(rate(up[5m])`)
	f.Fuzz(func(t *testing.T, expr string) {
		_, _ = Selectors(expr)
		if out, err := Substitute(expr, ExampleVariables); err == nil && variableRE.MatchString(out) && !variableRE.MatchString(expr) {
			t.Errorf("substitution introduced a variable: %q -> %q", expr, out)
		}
	})
}

// FuzzParseMetrics: no exposition crashes the metrics reader.
func FuzzParseMetrics(f *testing.F) {
	f.Add([]byte("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n"))
	f.Add([]byte("x{a=\"\\\"\"} NaN\n"))
	f.Add([]byte("# TYPE\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseMetrics(b); err == nil {
			_ = MetricsTable(m)
		}
	})
}

// FuzzDashboard: no JSON crashes the dashboard reader or its lint.
func FuzzDashboard(f *testing.F) {
	f.Add([]byte(`{"uid":"x","title":"x","panels":[{"id":1,"type":"row","panels":[{"id":2,"targets":[{"refId":"A","expr":"up"}]}]}]}`))
	f.Add([]byte(`{"templating":{"list":[{"name":"namespace","query":{"query":"label_values(up, namespace)"}}]}}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := LoadDashboard(b); err == nil {
			_ = d.Lint()
			_ = d.Queries()
			for _, v := range d.Templating.List {
				_ = v.QueryText()
			}
		}
	})
}
