package chartcheck

import (
	"context"
	"strings"
	"testing"
	"time"
)

// nodeMetrics: metrics-server (make cluster-up runs it) serves the
// resource metrics API that kubectl top and the chart's
// HorizontalPodAutoscalers read, with a figure for the release's edge.
func nodeMetrics(t *testing.T, n *Node, rep *nodeReport) {
	ctx := context.Background()
	// The resource metrics API, with a figure for every pod of the release.
	start := time.Now()
	var top string
	if !waitFor(3*time.Minute, 2*time.Second, func() bool {
		out, err := topEdge(n)
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
}
