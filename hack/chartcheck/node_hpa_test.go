package chartcheck

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The edge's HorizontalPodAutoscaler on the node: the chart's own target
// (70 % of the CPU request), between 1 and hpaMax replicas (the node has
// two cores), and a scale-down window of hpaScaleDownWindow instead of
// Kubernetes' default 300 s, so that the way back is seen in a test's
// time. The request is hpaRequest, not the chart's 50m: an edge of this
// test re-renders every few seconds (its collectors poll that often) and
// serves the looping client, about 40m on one replica in all, where 70 %
// of 50m is 35m; it would never come back to one.
const (
	hpaMax             = 3
	hpaScaleDownWindow = 30
	hpaRequest         = "100m"
)

// nodeHPA: metrics-server (make cluster-up runs it) answers kubectl top
// for the release's pods; with the edge's autoscaling on, load through the
// cache tier to the paths it never caches drives the edge from one replica
// to more, and back to one once the load ends, while a client looping
// through the cache tier sees every request answered: new pods take
// traffic once ready, removed ones drain.
func nodeHPA(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient, paths []string, cache string) {
	ctx := context.Background()
	deployment := "deployment/" + nodeRelease + "-tokendata-edge"
	hpa := "hpa/" + nodeRelease + "-tokendata-edge"
	get := func(what, jsonpath string) string {
		out, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", what, "-o", "jsonpath="+jsonpath)
		return strings.TrimSpace(out)
	}
	explain := func() string {
		desc, _ := n.Kubectl(ctx, "-n", nodeNamespace, "describe", hpa)
		top, _ := n.Kubectl(ctx, "-n", nodeNamespace, "top", "pods")
		return fmt.Sprintf("%s\nkubectl top pods:\n%s\n%s", desc, top, podStates(ctx, n))
	}

	// The resource metrics API, with a figure for every pod of the release.
	start := time.Now()
	var top string
	if !waitFor(3*time.Minute, 2*time.Second, func() bool {
		out, err := n.Kubectl(ctx, "-n", nodeNamespace, "top", "pods", "-l", "app.kubernetes.io/component=edge", "--no-headers")
		top = strings.TrimSpace(out)
		return err == nil && top != ""
	}) {
		ms, _ := n.Kubectl(ctx, "-n", "kube-system", "logs", "deployment/metrics-server", "--tail=20")
		svc, _ := n.Kubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "jsonpath={.status.conditions}")
		t.Fatalf("kubectl top pods gave no figure for the edge within 3 minutes (%q); the APIService: %s; metrics-server's log:\n%s", top, svc, ms)
	}
	f := strings.Fields(top)
	if len(f) != 3 || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[2], "Mi") {
		t.Fatalf("kubectl top pods: %q, want NAME <n>m <n>Mi", top)
	}
	rep.add("kubectl top pods (metrics-server): the edge %s of CPU, %s of memory (waited %s)", f[1], f[2], time.Since(start).Round(time.Second))

	// Autoscaling on. The request raised rolls the edge (a new pod
	// template) before the load.
	start = time.Now()
	if out, err := n.Helm(ctx, "upgrade", nodeRelease, chart.Dir, "-n", nodeNamespace, "--reuse-values", "--wait", "--timeout", "3m",
		"--set", "edge.autoscaling.enabled=true", "--set", "edge.autoscaling.minReplicas=1",
		"--set", "edge.autoscaling.maxReplicas="+strconv.Itoa(hpaMax), "--set", "edge.autoscaling.targetCPUUtilizationPercentage=70",
		"--set", "edge.resources.requests.cpu="+hpaRequest,
		"--set", "edge.autoscaling.behavior.scaleDown.stabilizationWindowSeconds="+strconv.Itoa(hpaScaleDownWindow)); err != nil {
		t.Fatalf("helm upgrade (autoscaling on): %v\n%s", err, out)
	}
	waitAvailable(t, n, "edge")
	var idle string
	if !waitFor(2*time.Minute, 2*time.Second, func() bool {
		idle = get(hpa, "{.status.currentMetrics[0].resource.current.averageUtilization}")
		return idle != ""
	}) {
		t.Fatalf("the HorizontalPodAutoscaler read no CPU utilization within 2 minutes:\n%s", explain())
	}
	if r := get(deployment, "{.spec.replicas}"); r != "1" {
		t.Fatalf("the edge runs %s replicas before any load, want 1 (idle at %s %% of its request):\n%s", r, idle, explain())
	}
	rep.add("helm upgrade turning the edge's autoscaling on (1–%d replicas, 70 %% of %s), to a first CPU figure (%s %%): %s",
		hpaMax, hpaRequest, idle, time.Since(start).Round(time.Second))

	var up, down time.Duration
	most := 0
	res := cl.loopDuring("hpa", paths, func() {
		// The alerts' busy hour again: 12 clients at once on the paths the
		// cache tier never caches.
		load := cl.start("load", ingressNamespace, "loop", "-duration", "6m", "-interval", "0s", "-workers", "12",
			cache+"/api/health", cache+"/api/status")
		cl.waitLog(load, ingressNamespace, `"ready":true`, 90*time.Second)
		loaded := time.Now()
		if !waitFor(4*time.Minute, time.Second, func() bool {
			wanted, _ := strconv.Atoi(get(deployment, "{.spec.replicas}"))
			most = max(most, wanted)
			ready, _ := strconv.Atoi(get(deployment, "{.status.readyReplicas}"))
			return ready >= 2
		}) {
			_, _ = n.Kubectl(ctx, "-n", ingressNamespace, "delete", "pod", load, "--wait=false")
			t.Errorf("under load, the edge had no second ready replica within 4 minutes:\n%s", explain())
			return
		}
		up = time.Since(loaded)
		_, _ = n.Kubectl(ctx, "-n", ingressNamespace, "delete", "pod", load, "--wait=false")
		unloaded := time.Now()
		if !waitFor(5*time.Minute, time.Second, func() bool {
			return get(deployment, "{.spec.replicas}") == "1" && len(podNames(t, n, "edge")) == 1
		}) {
			t.Errorf("after the load, the edge was not back to one replica within 5 minutes:\n%s", explain())
			return
		}
		down = time.Since(unloaded)
	})
	rep.add("the HPA under load through the cache tier: a second edge ready %s after the load began (%d replicas asked for), back to one replica and the others gone %s after it ended (scale-down window %d s); requests through the cache tier meanwhile: %d sent, %d failed",
		up.Round(time.Second), most, down.Round(time.Second), hpaScaleDownWindow, res.Sent, res.Failed)
	if most > hpaMax {
		t.Errorf("the edge scaled to %d replicas, above maxReplicas %d", most, hpaMax)
	}
	if res.Failed > 0 {
		t.Errorf("%d of %d requests failed while the HPA scaled the edge: %v", res.Failed, res.Sent, res.Errors)
	}
}
