package chartcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The local cluster's monitoring (hack/cluster/monitoring.yaml): a
// Prometheus run by the Prometheus Operator, selecting as a
// kube-prometheus-stack release of this name does.
const (
	monitoringNamespace = "monitoring"
	stackRelease        = "kube-prometheus-stack"
)

// nodeMonitoringValues turns the chart's ServiceMonitor and PrometheusRule
// on, labelled as the chart README tells a kube-prometheus-stack user to,
// scraped every 5 s so that the test sees its targets in seconds, and
// every alert's `for:` alertFor (monitoring.prometheusRule.for), so that
// nodeAlerts sees each fire in seconds.
func nodeMonitoringValues(t *testing.T) string {
	var b strings.Builder
	b.WriteString("monitoring:\n")
	b.WriteString("  serviceMonitor: {enabled: true, labels: {release: " + stackRelease + "}, interval: 5s, scrapeTimeout: 4s}\n")
	b.WriteString("  prometheusRule:\n    enabled: true\n    labels: {release: " + stackRelease + "}\n    for:\n")
	for _, a := range rules(t).Alerts() {
		b.WriteString("      " + a.Alert + ": " + alertFor + "\n")
	}
	return b.String()
}

// nodeMonitoring checks the chart's monitoring on the node, as the
// operator's Prometheus sees it: every pod behind a metrics Service of the
// release is a target and up (scraped through the chart's NetworkPolicies;
// a target down names the policies that select its pod), every alert of
// the PrometheusRule is loaded and evaluates without error, every series
// an alert selects exists, and every dashboard query returns data, after
// a spell of the public's traffic through the cache tier (cl); the
// selectors of failures alone are left to the failures that make them.
func nodeMonitoring(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient) {
	ctx := context.Background()
	since := time.Now()
	if _, err := n.Kubectl(ctx, "-n", monitoringNamespace, "rollout", "status",
		"statefulset/prometheus-"+stackRelease+"-prometheus", "--timeout=180s"); err != nil {
		out, _ := n.Kubectl(ctx, "-n", monitoringNamespace, "get", "prometheus,statefulset,pods", "-o", "wide")
		t.Fatalf("the operator's Prometheus is not ready: %v\n%s", err, out)
	}
	p := &prometheus{base: startPortForwardNS(t, n, monitoringNamespace, "svc/prometheus-operated", 9090)}

	want := metricsPods(t, n)
	if len(want) < 4 {
		t.Fatalf("pods behind the release's metrics Services: %v, want at least the edge and the three collectors", want)
	}
	queries, labelValues, alerts := liveQueries(t, nodeNamespace)

	// The public's traffic through the cache tier, and a path the API does
	// not have (a 404 of the edge's).
	cache := fmt.Sprintf("http://%s-tokendata-cache.%s.svc:8080", nodeRelease, nodeNamespace)
	res := cl.loopDuring("traffic", []string{cache + "/api/total-supply", cache + "/api/price", cache + "/api/holders"},
		func() { time.Sleep(12 * time.Second) })
	if res.Failed > 0 {
		t.Errorf("%d of %d requests through the cache tier failed: %v", res.Failed, res.Sent, res.Errors)
	}
	missing := cache + "/api/no-such-path"
	if got := cl.get("notfound", ingressNamespace, cache+"/api/health", missing)[missing]; got.Status != 404 {
		t.Errorf("%s through the cache tier: %d %s, want the edge's 404", missing, got.Status, got.Error)
	}

	var problems []string
	var exempted []string
	exempt := func(sel string) bool {
		if failureOnly(sel) {
			if !slices.Contains(exempted, sel) {
				exempted = append(exempted, sel)
			}
			return true
		}
		return false
	}
	var up time.Duration
	deadline := time.Now().Add(150 * time.Second)
	for {
		problems = missingTargets(p, want)
		if len(problems) == 0 && up == 0 {
			up = time.Since(since)
		}
		if len(problems) == 0 {
			problems = p.check(since, queries, labelValues, len(alerts), exempt)
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if len(problems) > 0 {
		policies := policiesByPod(t, n)
		for _, pr := range problems {
			for pod, names := range policies {
				if strings.Contains(pr, pod) {
					pr += fmt.Sprintf(" (NetworkPolicies selecting %s: %s)", pod, strings.Join(names, ", "))
				}
			}
			t.Error(pr)
		}
		return
	}
	sort.Strings(exempted)
	t.Logf("selectors a healthy release has no series of, left out: %s", strings.Join(exempted, ", "))
	rep.add("monitoring: the operator's Prometheus scraping all %d pods of the release through its NetworkPolicies %s after the check began; %d alerts loaded and evaluated, %d dashboard and alert queries answered (%d selectors of failures and revalidations left out), in %s",
		len(want), up.Round(time.Second), len(alerts), len(queries), len(exempted), time.Since(since).Round(time.Second))
}

// failureOnly reports whether a selector matches only what a healthy
// release behind its cache tier does not have within the test's minute:
// failures (5xx answers, polls or upstream requests that did not
// succeed), checked with the failure they show, not on a healthy
// release; and the edge's 304s, which behind the cache tier are only its
// revalidations of entries past their s-maxage (30 s for the market's,
// 300 s for the supply's), answered 304 only when the document did not
// change meanwhile (TestMonitoringLive sends conditional requests to an
// edge directly).
func failureOnly(sel string) bool {
	for _, m := range []string{`code=~"5.."`, `result!="ok"`, `outcome!="ok"`, `code="304"`} {
		if strings.Contains(sel, m) {
			return true
		}
	}
	return false
}

// metricsPods lists the running pods behind the release's Services
// labelled for scraping (tokendata.io/metrics).
func metricsPods(t *testing.T, n *Node) []string {
	t.Helper()
	ctx := context.Background()
	out, err := n.Kubectl(ctx, "-n", nodeNamespace, "get", "services", "-l",
		"tokendata.io/metrics=true,app.kubernetes.io/instance="+nodeRelease, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var svcs struct {
		Items []struct {
			Spec struct {
				Selector map[string]string `json:"selector"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &svcs); err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, s := range svcs.Items {
		var sel []string
		for k, v := range s.Spec.Selector {
			sel = append(sel, k+"="+v)
		}
		sort.Strings(sel)
		names, err := n.Kubectl(ctx, "-n", nodeNamespace, "get", "pods", "-l", strings.Join(sel, ","),
			"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, strings.Fields(names)...)
	}
	sort.Strings(pods)
	return pods
}

// missingTargets returns, for each pod of want, why it is not a target
// that is up (none when every one is).
func missingTargets(p *prometheus, want []string) []string {
	var targets struct {
		ActiveTargets []struct {
			Labels    map[string]string `json:"labels"`
			ScrapeURL string            `json:"scrapeUrl"`
			Health    string            `json:"health"`
			LastError string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := p.api("/api/v1/targets", url.Values{"state": {"active"}}, &targets); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, pod := range want {
		found := false
		for _, tg := range targets.ActiveTargets {
			if tg.Labels["pod"] != pod || tg.Labels["namespace"] != nodeNamespace {
				continue
			}
			found = true
			if tg.Health != "up" {
				problems = append(problems, fmt.Sprintf("target %s (pod %s, job %s): %s %s", tg.ScrapeURL, pod, tg.Labels["job"], tg.Health, tg.LastError))
			} else if !strings.HasPrefix(tg.Labels["job"], "tokendata-") {
				problems = append(problems, fmt.Sprintf("target %s (pod %s): job %q, want tokendata-<component> (the alerts and dashboards select on it)", tg.ScrapeURL, pod, tg.Labels["job"]))
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("pod %s is no target of the operator's Prometheus (%d active targets)", pod, len(targets.ActiveTargets)))
		}
	}
	return problems
}

// policiesByPod maps each pod of the release's namespace to the
// NetworkPolicies whose podSelector selects it (matchLabels).
func policiesByPod(t *testing.T, n *Node) map[string][]string {
	ctx := context.Background()
	var pols struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				PodSelector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"podSelector"`
			} `json:"spec"`
		} `json:"items"`
	}
	var pods struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"items"`
	}
	for what, v := range map[string]any{"networkpolicies": &pols, "pods": &pods} {
		out, err := n.Kubectl(ctx, "-n", nodeNamespace, "get", what, "-o", "json")
		if err != nil || json.Unmarshal([]byte(out), v) != nil {
			t.Logf("listing %s: %v", what, err)
			return nil
		}
	}
	byPod := map[string][]string{}
	for _, pod := range pods.Items {
		for _, pol := range pols.Items {
			match := true
			for k, v := range pol.Spec.PodSelector.MatchLabels {
				match = match && pod.Metadata.Labels[k] == v
			}
			if match {
				byPod[pod.Metadata.Name] = append(byPod[pod.Metadata.Name], pol.Metadata.Name)
			}
		}
	}
	return byPod
}
