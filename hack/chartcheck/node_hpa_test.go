package chartcheck

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The edge's HorizontalPodAutoscaler on the node: the chart's own target
// (70 % of the CPU request), between 1 and hpaMax replicas (the node has
// two cores), and a scale-down window of hpaScaleDownWindow instead of
// Kubernetes' default 300 s, so that the way back is seen in a test's
// time.
//
// The request is set from the edge's measured idle figure, hpaIdleShare
// times it, not fixed. Every replica pays that figure, load or not (it
// renders on every collector write), and it grows through the run, so
// N replicas come back to N-1 only when each idles under
// 70 % × (N-1)/N of its request, 35 % from two: a fixed request held
// early in a run and stuck at two replicas late in it. At 4 × the edge
// idles at 25 % of its request, and the load must drive one edge over
// 77 % (the HPA's 10 % tolerance above the target), 3.1 × the idle
// figure, to go out. The figures measured on both sides, and why:
// docs/scaling.md ("Every replica pays the idle figure"); the row
// reports both.
const (
	hpaMax             = 3
	hpaScaleDownWindow = 30
	hpaIdleShare       = 4   // request = 4 × the idle figure
	hpaMinRequest      = 100 // millicores, the floor of that request
)

// nodeHPA: with the edge's autoscaling on, load through the Ingress
// controller and the cache tier to the paths the tier never caches (cl's
// client, through Traefik: base is the public https://host) drives the
// edge from one replica to more, and back to one once the load ends,
// while another client looping on paths the same way sees every request
// answered: new pods take traffic once ready, removed ones drain.
func nodeHPA(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient, base string, paths ...string) {
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

	// The idle figure: the most of four readings of metrics-server, one
	// per resolution (15 s), so that one quiet reading sets no request.
	idle := 0
	for i := range 4 {
		if i > 0 {
			time.Sleep(15 * time.Second)
		}
		idle = max(idle, edgeTop(t, n))
	}
	request := max(hpaMinRequest, (hpaIdleShare*idle+9)/10*10)
	requestCPU := strconv.Itoa(request) + "m"

	// Autoscaling on. The request changed rolls the edge (a new pod
	// template) before the load.
	start := time.Now()
	if out, err := n.Helm(ctx, "upgrade", nodeRelease, chart.Dir, "-n", nodeNamespace, "--reuse-values", "--wait", "--timeout", "3m",
		"--set", "edge.autoscaling.enabled=true", "--set", "edge.autoscaling.minReplicas=1",
		"--set", "edge.autoscaling.maxReplicas="+strconv.Itoa(hpaMax), "--set", "edge.autoscaling.targetCPUUtilizationPercentage=70",
		"--set", "edge.resources.requests.cpu="+requestCPU,
		"--set", "edge.autoscaling.behavior.scaleDown.stabilizationWindowSeconds="+strconv.Itoa(hpaScaleDownWindow)); err != nil {
		t.Fatalf("helm upgrade (autoscaling on): %v\n%s", err, out)
	}
	waitAvailable(t, n, "edge")
	var before string
	if !waitFor(2*time.Minute, 2*time.Second, func() bool {
		before = get(hpa, "{.status.currentMetrics[0].resource.current.averageUtilization}")
		return before != ""
	}) {
		t.Fatalf("the HorizontalPodAutoscaler read no CPU utilization within 2 minutes:\n%s", explain())
	}
	if r := get(deployment, "{.spec.replicas}"); r != "1" {
		t.Fatalf("the edge runs %s replicas before any load, want 1 (at %s %% of its %s request, the idle figure was %dm):\n%s", r, before, requestCPU, idle, explain())
	}
	rep.add("helm upgrade turning the edge's autoscaling on (1–%d replicas, 70 %% of a %s request: %d × the idle %dm), to a first CPU figure (%s %%): %s",
		hpaMax, requestCPU, hpaIdleShare, idle, before, time.Since(start).Round(time.Second))

	var up, down time.Duration
	most, loaded := 0, 0
	res := cl.loopDuring("hpa", paths, func() {
		// The alerts' busy hour again: 12 clients at once on the paths the
		// cache tier never caches.
		// Kept-alive connections, as browsers and API clients keep theirs:
		// a TLS handshake per request would spend on Traefik the CPU the
		// load is meant to give the edge (98m, 81 % of the request, in the
		// one run without them).
		load, ns := cl.startLoop("load", "-duration", "6m", "-interval", "0s", "-workers", "12", "-keepalive",
			base+"/api/health", base+"/api/status")
		defer func() { _, _ = n.Kubectl(ctx, "-n", ns, "delete", "pod", load, "--wait=false", "--ignore-not-found") }()
		cl.waitLog(load, ns, `"ready":true`, 90*time.Second)
		began := time.Now()
		if !waitFor(4*time.Minute, time.Second, func() bool {
			wanted, _ := strconv.Atoi(get(deployment, "{.spec.replicas}"))
			most = max(most, wanted)
			if out, err := topEdge(n); err == nil {
				if ms := topMillicores(out); len(ms) > 0 {
					loaded = max(loaded, slices.Max(ms))
				}
			}
			ready, _ := strconv.Atoi(get(deployment, "{.status.readyReplicas}"))
			return ready >= 2
		}) {
			_, _ = n.Kubectl(ctx, "-n", ns, "delete", "pod", load, "--wait=false")
			t.Errorf("under load, the edge had no second ready replica within 4 minutes (one edge reached %dm, %d %% of its %s request; out from 77 %%):\n%s",
				loaded, 100*loaded/request, requestCPU, explain())
			return
		}
		up = time.Since(began)
		_, _ = n.Kubectl(ctx, "-n", ns, "delete", "pod", load, "--wait=false")
		unloaded := time.Now()
		if !waitFor(5*time.Minute, time.Second, func() bool {
			return get(deployment, "{.spec.replicas}") == "1" && len(podNames(t, n, "edge")) == 1
		}) {
			t.Errorf("after the load, the edge was not back to one replica within 5 minutes:\n%s", explain())
			return
		}
		down = time.Since(unloaded)
	})
	rep.add("the HPA under load through Traefik (HTTPS) and the cache tier: one edge at up to %dm (%d %% of its request), a second edge ready %s after the load began (%d replicas asked for), back to one replica and the others gone %s after it ended (scale-down window %d s); requests through Traefik and the cache tier meanwhile: %d sent, %d failed",
		loaded, 100*loaded/request, up.Round(time.Second), most, down.Round(time.Second), hpaScaleDownWindow, res.Sent, res.Failed)
	if most > hpaMax {
		t.Errorf("the edge scaled to %d replicas, above maxReplicas %d", most, hpaMax)
	}
	if res.Failed > 0 {
		t.Errorf("%d of %d requests failed while the HPA scaled the edge: %v", res.Failed, res.Sent, res.Errors)
	}
}

// edgeTop is the most CPU, in millicores, that kubectl top gives for one
// of the release's edge pods, waiting up to 3 minutes for a figure (the
// metrics row waits before this one, but a run of this row alone comes
// before metrics-server's first reading of a new release).
func edgeTop(t *testing.T, n *Node) int {
	t.Helper()
	var out string
	var ms []int
	if !waitFor(3*time.Minute, 2*time.Second, func() bool {
		var err error
		out, err = topEdge(n)
		ms = topMillicores(out)
		return err == nil && len(ms) > 0
	}) {
		t.Fatalf("kubectl top pods gave no CPU figure for the edge within 3 minutes:\n%s", out)
	}
	return slices.Max(ms)
}

// topEdge is kubectl top pods for the release's edge pods, one line a
// pod: NAME <n>m <n>Mi.
func topEdge(n *Node) (string, error) {
	return n.Kubectl(context.Background(), "-n", nodeNamespace, "top", "pods", "-l", "app.kubernetes.io/component=edge", "--no-headers")
}

// topMillicores reads the CPU column of kubectl top pods --no-headers
// (NAME <n>m <n>Mi), one figure a line; lines of another shape are left
// out.
func topMillicores(out string) []int {
	var ms []int
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasSuffix(f[1], "m") {
			continue
		}
		if m, err := strconv.Atoi(strings.TrimSuffix(f[1], "m")); err == nil {
			ms = append(ms, m)
		}
	}
	return ms
}
