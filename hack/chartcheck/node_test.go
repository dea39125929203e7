package chartcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The release of the node test, in a namespace of its own (a developer's
// release on the same cluster is left alone).
const (
	nodeRelease   = "e2e"
	nodeNamespace = "tokendata-e2e"
	// The Ingress controller's namespace (make cluster-up runs Traefik
	// there: hack/cluster/traefik.yaml), the node test's
	// networkPolicy.publicFrom: the public's traffic comes from there, and
	// the test's clients that stand for the controller run there.
	ingressNamespace = traefikNamespace
	otherNamespace   = "outsider"
)

// nodeReport collects the figures the node test measures; make test prints
// them (NODE_REPORT names the file).
type nodeReport struct {
	mu    sync.Mutex
	lines []string
}

func (r *nodeReport) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *nodeReport) write(t *testing.T) {
	path := os.Getenv("NODE_REPORT")
	if path == "" {
		for _, l := range r.lines {
			t.Log(l)
		}
		return
	}
	head := fmt.Sprintf("Measured on %s, %d cores, commit %s:\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), commitOf(t))
	if err := os.WriteFile(path, []byte(head+"- "+strings.Join(r.lines, "\n- ")+"\n"), 0o644); err != nil {
		t.Error(err)
	}
}

func commitOf(t *testing.T) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// TestNode installs the chart on a real cluster of nodeCount nodes (make
// cluster-up NODES=3: kubelets, containerd and runc running the chart's own pod
// specs, CoreDNS, kube-proxy's Services, kube-router enforcing the
// NetworkPolicies, PodSecurity "restricted" on the namespace), with the
// service images built here (hack/imagebuild) and the local stand-ins of
// the third-party ones, and uses it as an operator would: every /api/ path
// through the cache tier's Service with the simulator's exact supply,
// helm test, an upgrade rolling the edge and the cache tier under a client
// that must see no failed request, an edge pod and the Redis pod deleted
// under the same client, /api/events through the cache tier receiving a
// burn, the Prometheus Operator's Prometheus scraping every pod through
// the policies with the chart's alerts loaded and its dashboards answered
// (node_monitoring_test.go), each alert fired by its cause and resolved
// (node_alerts_test.go), metrics-server's figures for the release's pods
// (node_metrics_test.go), the edge's HorizontalPodAutoscaler scaling out
// under load and back on those figures (node_hpa_test.go), the
// chart's replicas spread over the nodes, ten edge pods deleted in turn,
// each node drained as a node-pool upgrade does it and a node lost under
// clients looping through the cache tier and Traefik (node_pool_test.go),
// the NetworkPolicies holding from other nodes, helm uninstall
// leaving nothing, and,
// when this test brought the cluster up, cluster-down leaving the host as
// it found it.
// slowEdgeReady: seconds before a new edge pod may turn ready, from the
// roll on (edge.readinessProbe.initialDelaySeconds). The replacement of
// the only edge pod must be ready before the stopping one ends, at
// lifecycle.drainMax (15 s): it turns ready up to a readiness period (5 s)
// after this delay, plus its start, so 5 s leaves a margin; 10 s did not
// (ready 15.4 s after the deletion, and two requests refused between the
// two pods: the 502s of one run in four).
const (
	slowEdgeReady = 5
	edgeDrainMax  = 15 * time.Second
)

func TestNode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the node test takes minutes")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the node test needs root (the local cluster's namespaces, cgroups and mounts); CI runs as root")
	}
	ctx := context.Background()
	rep := &nodeReport{}
	defer rep.write(t)
	n := OpenNode(root)
	n.Nodes = nodeCount
	wasUp := n.IsUp(ctx)
	var before map[string]string
	if !wasUp {
		var err error
		if before, err = HostState(); err != nil {
			t.Fatal(err)
		}
	}
	// A cluster this test brings up it also takes down, and checks the
	// host after, even when cluster-up fails halfway (a control plane and
	// a node left running otherwise, their cgroups and namespace too).
	if !wasUp {
		defer func() {
			start := time.Now()
			if out, err := n.Down(ctx); err != nil {
				t.Errorf("%v\n%s", err, out)
				return
			}
			rep.add("cluster-down: %s", time.Since(start).Round(100*time.Millisecond))
			after, err := HostState()
			if err != nil {
				t.Fatal(err)
			}
			if d := DiffState(before, after); len(d) > 0 {
				t.Errorf("cluster-down left the host changed:\n%s", strings.Join(d, "\n"))
			}
		}()
	}
	start := time.Now()
	if out, err := n.Up(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if wasUp {
		rep.add("cluster-up on a cluster already up: %s", time.Since(start).Round(100*time.Millisecond))
	} else {
		rep.add("cluster-up (binaries cached): %s", time.Since(start).Round(100*time.Millisecond))
	}

	imgs := buildNodeImages(t, n)
	netcheck := pushNetcheck(t, n)
	for _, ns := range []string{nodeNamespace, otherNamespace} {
		_, _ = n.Kubectl(ctx, "delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=120s")
	}
	// The controller's namespace is the cluster's: only the clients an
	// earlier run may have left there go.
	_, _ = n.Kubectl(ctx, "-n", ingressNamespace, "delete", "pods", "-l", "app.kubernetes.io/name=netcheck", "--wait=false")
	if err := n.Apply(ctx, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
---
apiVersion: v1
kind: Namespace
metadata: {name: %s, labels: {pod-security.kubernetes.io/enforce: restricted}}
`, nodeNamespace, otherNamespace)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, ns := range []string{otherNamespace, nodeNamespace} {
			_, _ = n.Kubectl(ctx, "delete", "namespace", ns, "--ignore-not-found", "--wait=false")
		}
		_, _ = n.Kubectl(ctx, "-n", ingressNamespace, "delete", "pods", "-l", "app.kubernetes.io/name=netcheck", "--wait=false")
	}()
	// The Ingress controller and cert-manager ready, and the controller's
	// Gateway, whose certificate cert-manager issues.
	setupIngress(t, n)

	values := filepath.Join(t.TempDir(), "images.yaml")
	var vb strings.Builder
	for svc, key := range map[string]string{"edge": "edge", "supply": "supply", "market": "market", "holders": "holders", "standalone": "simulator"} {
		repo, digest, _ := strings.Cut(imgs[svc], "@")
		extra := ""
		switch key {
		case "simulator":
			// the supply moves only by the test's burns; ledger node 1 is the
			// holders' second source
			extra = ", supplyEvery: 0s, nodes: 1"
		case "holders":
			extra = ", " + alertHoldersValues
		}
		fmt.Fprintf(&vb, "%s: {image: {repository: %q, digest: %q}%s}\n", key, repo, digest, extra)
	}
	vb.WriteString(ingressValues)
	vb.WriteString(nodeMonitoringValues(t))
	vb.WriteString(alertTimingValues)
	if err := os.WriteFile(values, []byte(vb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	helmArgs := []string{"-n", nodeNamespace, "-f", filepath.Join(chart.Dir, "values-dev.yaml"),
		"-f", filepath.Join(n.Dir, "values-local.yaml"), "-f", values}
	start = time.Now()
	if out, err := n.Helm(ctx, append([]string{"install", nodeRelease, chart.Dir, "--wait", "--timeout", "5m"}, helmArgs...)...); err != nil {
		t.Fatalf("helm install: %v\n%s\n%s", err, out, podStates(ctx, n))
	}
	if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=60s"); err != nil {
		t.Fatalf("%v\n%s", err, podStates(ctx, n))
	}
	rep.add("helm install (development values, simulator) to every Deployment Available: %s", time.Since(start).Round(100*time.Millisecond))
	defer func() {
		if t.Failed() {
			t.Logf("pods at the end:\n%s", podStates(ctx, n))
		}
	}()
	nodeMemory(t, n, rep)

	cl := &nodeClient{t: t, n: n, image: netcheck}
	cache := fmt.Sprintf("http://%s-tokendata-cache.%s.svc:8080", nodeRelease, nodeNamespace)
	edge := fmt.Sprintf("http://%s-tokendata-edge.%s.svc:8080", nodeRelease, nodeNamespace)
	sim := startPortForward(t, n, "svc/"+nodeRelease+"-tokendata-simulator", 8899)

	var supply string // the simulator's, after the paths row's burn
	t.Run("paths", func(t *testing.T) {
		cl := cl.with(t)
		supply = burn(t, sim, 1_000_000)
		decimals := 6
		// The burn reaches the API through the supply collector's
		// subscription, then the cache tier's freshness window.
		var got map[string]getResult
		if !waitFor(60*time.Second, 2*time.Second, func() bool {
			got = cl.get("paths", ingressNamespace, cache+"/api/supply")
			var body struct {
				Raw string `json:"total_supply_raw"`
			}
			_ = json.Unmarshal([]byte(got[cache+"/api/supply"].Body), &body)
			return body.Raw == supply
		}) {
			t.Fatalf("/api/supply through the cache tier never showed the burned supply %s: %+v", supply, got)
		}
		var urls []string
		for _, p := range nodeAPIPaths {
			urls = append(urls, cache+"/api/"+p)
		}
		got = cl.get("paths", ingressNamespace, urls...)
		for _, u := range urls {
			r := got[u]
			if r.Status != http.StatusOK {
				t.Errorf("%s: %d %s%s", u, r.Status, r.Error, r.Body)
			}
		}
		want := units(supply, decimals)
		for _, p := range []string{"total-supply", "circulating-supply"} {
			if b := got[cache+"/api/"+p].Body; b != want {
				t.Errorf("/api/%s = %q, want the simulator's supply %q", p, b, want)
			}
		}
	})

	// The certificates cert-manager issued for the release's Ingress and
	// the Gateway its HTTPRoute attaches to.
	issued := certificatesIssued(t, n, rep)
	nodeIngress(t, n, rep, cl, sim, issued, supply)

	// The holders collector follows the count live by default
	// (HOLDERS_LIVE auto): its socket to the node's PubSub goes through
	// the NetworkPolicies, and a new holder on the ledger reaches the API
	// from its notification, not from an enumeration.
	t.Run("holders live", func(t *testing.T) {
		api := startPortForward(t, n, "svc/"+nodeRelease+"-tokendata-edge", 8080)
		var h nodeHolders
		if !waitFor(2*time.Minute, time.Second, func() bool { h = readNodeHolders(api); return h.Method == "live" }) {
			t.Fatalf("/api/holders never became live: %+v", h)
		}
		// A resync (HOLDERS_RESYNC, 15 s in this test) may re-anchor the
		// count between the change and its read: the count is then an
		// enumeration's, which proves nothing of the notification, and a
		// new change is tried (three at most).
		var before nodeHolders
		var change struct {
			Slot uint64 `json:"slot"`
		}
		var took time.Duration
		for attempt := 1; ; attempt++ {
			before = readNodeHolders(api)
			start := time.Now()
			change = postHolderChange(t, sim, "new?amount=1000")
			// The notification's slot is the change's less the commitment's
			// lag (HOLDERS_COMMITMENT confirmed), so the count is waited for,
			// not the control's slot.
			if !waitFor(30*time.Second, 100*time.Millisecond, func() bool {
				h = readNodeHolders(api)
				return h.Method == "live" && h.Holders != before.Holders
			}) {
				t.Fatalf("/api/holders never showed the new holder (slot %d): before %+v, now %+v", change.Slot, before, h)
			}
			took = time.Since(start)
			if h.Live.AnchorSlot == before.Live.AnchorSlot || attempt == 3 {
				break
			}
			t.Logf("a resync re-anchored the count (slot %d to %d) as the new holder came: again", before.Live.AnchorSlot, h.Live.AnchorSlot)
		}
		if h.Holders != before.Holders+1 || h.Live.AnchorSlot != before.Live.AnchorSlot || h.Slot <= before.Slot {
			t.Errorf("after a new holder at slot %d: %+v, want %d holders on the same anchor as %+v, at a later slot", change.Slot, h, before.Holders+1, before)
		}
		rep.add("holders live (anchored at slot %d, through the NetworkPolicies): a new holder in /api/holders %s after the ledger's change",
			h.Live.AnchorSlot, took.Round(10*time.Millisecond))
	})

	t.Run("helm test", func(t *testing.T) {
		start := time.Now()
		out, err := n.Helm(ctx, "test", nodeRelease, "-n", nodeNamespace, "--timeout", "3m")
		if err != nil {
			t.Fatalf("helm test: %v\n%s", err, out)
		}
		rep.add("helm test (NetworkPolicies enforced, a new pod): passed in %s", time.Since(start).Round(100*time.Millisecond))
		if pods, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", "pods", "-l", "app.kubernetes.io/component=test", "-o", "name"); strings.TrimSpace(pods) != "" {
			t.Errorf("helm test left its pod: %s", pods)
		}
	})

	paths := []string{cache + "/api/total-supply", cache + "/api/price", cache + "/api/market-data", cache + "/api/health", cache + "/api/status"}

	t.Run("upgrade rolls the edge and the cache tier", func(t *testing.T) {
		cl := cl.with(t)
		old := podNames(t, n, "edge", "cache")
		res := cl.loopDuring("roll", paths, func() {
			start := time.Now()
			// The new edge is ready slowEdgeReady s after it starts at the soonest, as
			// a pod whose image is pulled first may be: the roll waits for
			// it, and the deletion below must be covered by the stopping
			// pod (lifecycle.drainMax) until it is.
			if out, err := n.Helm(ctx, append([]string{"upgrade", nodeRelease, chart.Dir, "--wait", "--timeout", "3m",
				"--set-string", "edge.podAnnotations.e2e-roll=1", "--set-string", "cache.podAnnotations.e2e-roll=1",
				"--set", "edge.readinessProbe.initialDelaySeconds=" + strconv.Itoa(slowEdgeReady)}, helmArgs...)...); err != nil {
				t.Errorf("helm upgrade: %v\n%s", err, out)
				return
			}
			waitGone(t, n, old)
			rep.add("helm upgrade rolling the edge and the cache tier, old pods gone: %s", time.Since(start).Round(100*time.Millisecond))
		})
		rep.add("requests through the cache tier during that roll: %d sent, %d failed", res.Sent, res.Failed)
		if res.Failed > 0 {
			t.Errorf("%d of %d requests failed during the roll: %v", res.Failed, res.Sent, res.Errors)
		}
	})

	// The only edge pod deleted, its replacement ready slowEdgeReady
	// seconds after it starts at the soonest (the roll above set it):
	// Kubernetes sends to the stopping pod until then, as long as it
	// reports ready and serves (DRAIN_MAX).
	t.Run("edge pod deleted", func(t *testing.T) {
		cl := cl.with(t)
		old := podNames(t, n, "edge")
		var deleted time.Time
		var replaced time.Duration
		res := cl.loopDuring("edge-deleted", paths, func() {
			deleted = time.Now()
			if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "delete", "pod", "--wait=false", old[0]); err != nil {
				t.Error(err)
				return
			}
			waitReplacementReady(t, n, "edge", old)
			replaced = time.Since(deleted)
			waitGone(t, n, old)
			waitAvailable(t, n, "edge")
		})
		rep.add("requests during the deletion of the only edge pod, its replacement ready %s after (readiness delayed %d s): %d sent, %d failed, the old pod gone %s after",
			replaced.Round(100*time.Millisecond), slowEdgeReady, res.Sent, res.Failed, time.Since(deleted).Round(100*time.Millisecond))
		if replaced < time.Duration(slowEdgeReady)*time.Second {
			t.Errorf("the replacement was ready %s after the deletion: the readiness delay of the roll did not hold", replaced)
		}
		if res.Failed > 0 {
			t.Errorf("%d of %d requests failed while the edge pod was deleted: %v", res.Failed, res.Sent, res.Errors)
			if replaced > edgeDrainMax {
				t.Errorf("the replacement was ready %s after the deletion, past the stopping pod's lifecycle.drainMax (%s): no pod served between", replaced, edgeDrainMax)
			}
		}
	})

	t.Run("redis pod deleted", func(t *testing.T) {
		cl := cl.with(t)
		redis := nodeRelease + "-tokendata-redis-0"
		keysBefore := redisKeys(t, n, redis)
		if len(keysBefore) == 0 {
			t.Fatal("no key in Redis before its deletion")
		}
		var back, capBack time.Duration
		res := cl.loopDuring("redis-deleted", paths, func() {
			uid, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", "pod", redis, "-o", "jsonpath={.metadata.uid}")
			if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "delete", "pod", redis, "--wait=true", "--timeout=60s"); err != nil {
				t.Error(err)
				return
			}
			if !waitFor(90*time.Second, 200*time.Millisecond, func() bool {
				u, err := n.Kubectl(ctx, "-n", nodeNamespace, "get", "pod", redis, "-o", "jsonpath={.metadata.uid}")
				if err != nil || u == uid {
					return false
				}
				_, err = n.Kubectl(ctx, "-n", nodeNamespace, "wait", "--for=condition=Ready", "pod/"+redis, "--timeout=1s")
				return err == nil
			}) {
				t.Error("the new Redis pod was not Ready within 90 s")
				return
			}
			ready := time.Now()
			// Every document and status record is written back by its
			// collector's Restore, and every history series appended by
			// the early poll after it, within one COLLECTOR_WATCH_INTERVAL.
			// But the market cap's series: its sample needs the supply
			// document, and the market's early poll may come before the
			// supply collector's write-back (two processes, each on its own
			// watch): then it starts with the next market poll, one
			// MARKET_REFRESH (60 s here) later. A gap, never a guess.
			early, marketCap := splitKeys(keysBefore, ":history:market_cap_usd:")
			if !waitFor(30*time.Second, 250*time.Millisecond, func() bool { return hasAll(redisKeys(t, n, redis), early) }) {
				t.Errorf("the collectors did not write every key back within 30 s of the new Redis: missing %v", missingKeys(redisKeys(t, n, redis), early))
				return
			}
			back = time.Since(ready)
			if !waitFor(90*time.Second, 250*time.Millisecond, func() bool { return hasAll(redisKeys(t, n, redis), marketCap) }) {
				t.Errorf("the market cap's history was not back within 90 s of the new Redis (MARKET_REFRESH 60 s): missing %v", missingKeys(redisKeys(t, n, redis), marketCap))
				return
			}
			capBack = time.Since(ready)
		})
		rep.add("requests during the Redis pod's deletion: %d sent, %d failed; every document, status record and history series back %s after the new Redis was Ready (bound 10s), the market cap's series %s after (bound MARKET_REFRESH)",
			res.Sent, res.Failed, back.Round(100*time.Millisecond), capBack.Round(100*time.Millisecond))
		if res.Failed > 0 {
			t.Errorf("%d of %d requests failed while Redis was deleted: %v", res.Failed, res.Sent, res.Errors)
		}
		if back > 10*time.Second {
			t.Errorf("the data was back %s after the new Redis, past the fault matrix's bound of 10 s", back)
		}
	})

	t.Run("events through the cache tier", func(t *testing.T) {
		cl := cl.with(t)
		pod := cl.start("events", ingressNamespace, "events", "-duration", "60s", "-until", "never-in-a-body", cache+"/api/events")
		cl.waitLog(pod, ingressNamespace, `"ready":true`, 90*time.Second)
		supply := burn(t, sim, 2_000_000)
		start := time.Now()
		needle := `\"total_supply_raw\":\"` + supply + `\"`
		if !waitFor(20*time.Second, 250*time.Millisecond, func() bool {
			logs, _ := n.Kubectl(ctx, "-n", ingressNamespace, "logs", pod)
			return strings.Contains(logs, needle)
		}) {
			logs, _ := n.Kubectl(ctx, "-n", ingressNamespace, "logs", pod)
			t.Fatalf("no supply event of %s through the cache tier within 20 s of the burn:\n%.3000s", supply, logs)
		}
		rep.add("a burn on the simulator to a supply event through the cache tier: %s", time.Since(start).Round(10*time.Millisecond))
		_, _ = n.Kubectl(ctx, "-n", ingressNamespace, "delete", "pod", pod, "--wait=false")
	})

	t.Run("monitoring", func(t *testing.T) { nodeMonitoring(t, n, rep, cl.with(t)) })
	t.Run("alerts fire by their causes", func(t *testing.T) { nodeAlerts(t, n, rep, cl.with(t), sim) })
	t.Run("metrics-server answers kubectl top", func(t *testing.T) { nodeMetrics(t, n, rep) })
	t.Run("the HPA scales the edge out and back", func(t *testing.T) {
		public := "https://" + publicHost
		nodeHPA(t, n, rep, cl.with(t).through(otherNamespace, traefikVia(issued)...), public,
			public+"/api/total-supply", public+"/api/price", public+"/api/market-data", "https://"+gatewayHost+"/api/health", public+"/api/status")
	})

	t.Run("replicas spread over the nodes", func(t *testing.T) { nodeSpread(t, n, rep) })
	t.Run("edge pods deleted, two replicas", func(t *testing.T) { edgeDeletions(t, n, rep, cl.with(t), paths) })
	t.Run("a node-pool upgrade drains each node", func(t *testing.T) {
		public := "https://" + publicHost
		nodeDrains(t, n, rep, cl.with(t), cl.with(t).through(otherNamespace, traefikVia(issued)...), paths,
			[]string{public + "/api/total-supply", public + "/api/price", "https://" + gatewayHost + "/api/health", public + "/api/status"})
	})

	t.Run("a node lost", func(t *testing.T) {
		public := "https://" + publicHost
		nodeLost(t, n, rep, cl.with(t), cl.with(t).through(otherNamespace, traefikVia(issued)...), paths,
			[]string{public + "/api/total-supply", public + "/api/price", "https://" + gatewayHost + "/api/health", public + "/api/status"})
	})

	t.Run("network policies", func(t *testing.T) {
		cl := cl.with(t)
		// From another namespace: nothing, for long enough that an allowed
		// connection would have been let in (helm test's pod, new too, is
		// answered within seconds). From the Ingress controller's
		// namespace: the cache tier, never the edge directly.
		// Each from a node with no pod of its target, so that the
		// policies are held across nodes (the target's node enforcing them
		// on traffic routed in from another).
		probes := []struct{ ns, url, target, pod, node string }{{otherNamespace, cache + "/api/health", "cache", "", ""}, {ingressNamespace, edge + "/api/health", "edge", "", ""}}
		names, err := n.NodeNames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range probes {
			targets := distinct(podNodes(t, n, c.target))
			for _, node := range names {
				if !slices.Contains(targets, node) {
					probes[i].node = node
					break
				}
			}
			if probes[i].node == "" {
				t.Fatalf("every node runs a %s pod (%v): no node to probe it from", c.target, targets)
			}
			probes[i].pod = cl.on(probes[i].node).start("denied", c.ns, "loop", "-wait", "25s", "-timeout", "2s", "-settle", "1", c.url)
		}
		for _, c := range probes {
			pod := c.pod
			if !waitFor(90*time.Second, time.Second, func() bool {
				phase, _ := n.Kubectl(ctx, "-n", c.ns, "get", "pod", pod, "-o", "jsonpath={.status.phase}")
				return phase == "Failed" || phase == "Succeeded"
			}) {
				t.Fatalf("%s: the client did not end", pod)
			}
			logs, _ := n.Kubectl(ctx, "-n", c.ns, "logs", pod)
			if !strings.Contains(logs, "did not answer 200 (1 in a row) within") {
				t.Errorf("from namespace %s, %s answered (the NetworkPolicies let it in):\n%s", c.ns, c.url, logs)
			}
			_, _ = n.Kubectl(ctx, "-n", c.ns, "delete", "pod", pod, "--wait=false")
		}
		rep.add("NetworkPolicies (kube-router), each probe from a node with no pod of its target: the cache tier from %s only; from %s (on %s) nothing, the edge from %s (on %s) refused",
			ingressNamespace, otherNamespace, probes[0].node, ingressNamespace, probes[1].node)
	})

	t.Run("a failed helm test leaves nothing", func(t *testing.T) {
		// The cache tier gone, the test fails (within its retry bound):
		// its pod and NetworkPolicy are deleted all the same, after helm
		// printed the pod's log.
		if out, err := n.Helm(ctx, append([]string{"upgrade", nodeRelease, chart.Dir, "--wait", "--timeout", "3m",
			"--set", "tests.connectTimeoutSeconds=5"}, helmArgs...)...); err != nil {
			t.Fatalf("helm upgrade: %v\n%s", err, out)
		}
		cache := podNames(t, n, "cache")
		if _, err := n.Kubectl(ctx, "-n", nodeNamespace, "scale", "deployment/"+nodeRelease+"-tokendata-cache", "--replicas=0"); err != nil {
			t.Fatal(err)
		}
		waitGone(t, n, cache)
		out, err := n.Helm(ctx, "test", nodeRelease, "-n", nodeNamespace, "--timeout", "2m")
		if err == nil {
			t.Fatalf("helm test passed with no cache tier:\n%s", out)
		}
		if !strings.Contains(err.Error(), "no answer from") {
			t.Errorf("helm test's failure does not show the pod's log: %v", err)
		}
		for _, kind := range []string{"pods", "networkpolicies"} {
			if left, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", kind, "-l", "app.kubernetes.io/component=test", "-o", "name"); strings.TrimSpace(left) != "" {
				t.Errorf("a failed helm test left %s", left)
			}
		}
	})

	t.Run("uninstall leaves nothing", func(t *testing.T) {
		if out, err := n.Helm(ctx, "uninstall", nodeRelease, "-n", nodeNamespace, "--wait", "--timeout", "3m"); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		// The Ingress's Certificate, its request and its Secret go with it:
		// the Ingress owns the Certificate cert-manager made from its
		// annotation, and the Certificate its Secret (cert-manager's
		// -enable-certificate-owner-ref, hack/cluster/cert-manager.yaml).
		// Pods end after their drain (the edge's DRAIN_DELAY, the cache
		// tier's preStop): nothing may be left once they have.
		var left []string
		if !waitFor(90*time.Second, 2*time.Second, func() bool {
			left = namespacedObjects(t, n, nodeNamespace)
			return len(left) == 0
		}) {
			t.Errorf("helm uninstall left %v", left)
		}
	})

	t.Run("skaffold local profile", func(t *testing.T) { skaffoldLocal(t, n, rep) })
}

// buildNodeImages builds the five service images (hack/imagebuild, the
// Dockerfile's image without Docker) on the stand-in base and pushes them
// to the node's registry: service -> repository@digest.
func buildNodeImages(t *testing.T, n *Node) map[string]string {
	t.Helper()
	base := n.Images[dockerfileRuntimeImage(t)]
	if base == "" {
		t.Fatalf("no stand-in of the Dockerfile's runtime image in %v", n.Images)
	}
	cmd := exec.Command(filepath.Join(n.Root, ".bin", "imagebuild"), "services", "-registry", n.Registry+"/tokendata",
		"-insecure", "-tag", "e2e", "-base", base, "-version", "0.0.0-e2e", "-commit", commitOf(t))
	cmd.Dir = n.Root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("imagebuild services: %v", err)
	}
	imgs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			imgs[f[0]] = f[1]
		}
	}
	if len(imgs) != 5 {
		t.Fatalf("imagebuild services pushed %v, want the five services", imgs)
	}
	return imgs
}

func dockerfileRuntimeImage(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(root, "services", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG RUNTIME_IMAGE=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("services/Dockerfile: no ARG RUNTIME_IMAGE=")
	}
	return string(m[1])
}

// pushNetcheck builds cmd/netcheck and pushes it as an image.
func pushNetcheck(t *testing.T, n *Node) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "netcheck")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/netcheck")
	build.Env = append(withoutEnv(os.Environ(), "GOWORK"), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build netcheck: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(n.Root, ".bin", "imagebuild"), "binary", "-registry", n.Registry, "-insecure",
		"-bin", bin, "-at", "/netcheck", "tokendata-local/netcheck:e2e").Output()
	if err != nil {
		t.Fatalf("push netcheck: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("push netcheck: %q", out)
	}
	return f[1]
}

// nodeClient runs netcheck pods on the node.
type nodeClient struct {
	t     *testing.T
	n     *Node
	image string
	// Where loopDuring's client runs (default ingressNamespace) and the
	// flags get and loopDuring add (netcheck's -connect and -ca).
	loopNS string
	extra  []string
	// The node its pods run on ("": where the scheduler puts them).
	node string
}

// startLoop starts a netcheck loop with args (flags, then URLs) where
// loopDuring's run, with through's flags, and returns the pod and its
// namespace.
func (c *nodeClient) startLoop(prefix string, args ...string) (pod, ns string) {
	c.t.Helper()
	ns = c.loopNS
	if ns == "" {
		ns = ingressNamespace
	}
	return c.start(prefix, ns, append(append([]string{"loop"}, c.extra...), args...)...), ns
}

// through is a copy whose loops run in ns and whose get and loop add args.
func (c *nodeClient) through(ns string, args ...string) *nodeClient {
	cp := *c
	cp.loopNS = ns
	cp.extra = args
	return &cp
}

// on is a copy whose pods run on node (spec.nodeName: a client that a
// drain of another node leaves alone).
func (c *nodeClient) on(node string) *nodeClient {
	cp := *c
	cp.node = node
	return &cp
}

func (c *nodeClient) with(t *testing.T) *nodeClient {
	cp := *c
	cp.t = t
	return &cp
}

var podSeq struct {
	sync.Mutex
	n int
}

// start creates a netcheck pod in ns with args and returns its name.
func (c *nodeClient) start(prefix, ns string, args ...string) string {
	c.t.Helper()
	podSeq.Lock()
	podSeq.n++
	name := fmt.Sprintf("%s-%d", prefix, podSeq.n)
	podSeq.Unlock()
	argv, _ := json.Marshal(args)
	node := ""
	if c.node != "" {
		node = "nodeName: " + c.node
	}
	if err := c.n.Apply(context.Background(), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {app.kubernetes.io/name: netcheck}}
spec:
  %s
  restartPolicy: Never
  automountServiceAccountToken: false
  enableServiceLinks: false
  # A lookup that got no answer is asked again after 1 s, not 5 (the
  # resolver's default), up to 3 times, each on a new socket that
  # kube-proxy balances anew: a CoreDNS pod moved by a drain costs a
  # second, not the request (what a client tuned for a cluster whose
  # nodes are upgraded sets; docs/decisions.md).
  dnsConfig:
    options: [{name: timeout, value: "1"}, {name: attempts, value: "3"}]
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: netcheck
      image: %q
      args: %s
      resources: {requests: {cpu: 10m, memory: 16Mi}, limits: {memory: 64Mi}}
      securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, name, ns, node, c.image, argv)); err != nil {
		c.t.Fatal(err)
	}
	return name
}

// wait waits for a pod's end and returns its log.
func (c *nodeClient) wait(pod, ns string, d time.Duration) string {
	c.t.Helper()
	ctx := context.Background()
	if !waitFor(d, time.Second, func() bool {
		phase, _ := c.n.Kubectl(ctx, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.phase}")
		return phase == "Succeeded" || phase == "Failed"
	}) {
		logs, _ := c.n.Kubectl(ctx, "-n", ns, "logs", pod)
		c.t.Fatalf("pod %s/%s did not end within %s:\n%s", ns, pod, d, logs)
	}
	logs, err := c.n.Kubectl(ctx, "-n", ns, "logs", pod)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = c.n.Kubectl(ctx, "-n", ns, "delete", "pod", pod, "--wait=false")
	return logs
}

func (c *nodeClient) waitLog(pod, ns, needle string, d time.Duration) {
	c.t.Helper()
	if !waitFor(d, 500*time.Millisecond, func() bool {
		logs, _ := c.n.Kubectl(context.Background(), "-n", ns, "logs", pod)
		return strings.Contains(logs, needle)
	}) {
		logs, _ := c.n.Kubectl(context.Background(), "-n", ns, "logs", pod)
		c.t.Fatalf("pod %s/%s: no %q within %s:\n%s\n%s", ns, pod, needle, d, logs, podStates(context.Background(), c.n))
	}
}

type getResult struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
	Cert   string `json:"cert"` // over TLS: the SHA-256 of the certificate presented
}

// get fetches urls once each from a pod in ns (waiting first for the
// first URL to answer: a new pod is let in once its rules are programmed).
func (c *nodeClient) get(prefix, ns string, urls ...string) map[string]getResult {
	c.t.Helper()
	pod := c.start(prefix, ns, append(append([]string{"get", "-wait", "60s"}, c.extra...), urls...)...)
	logs := c.wait(pod, ns, 2*time.Minute)
	out := map[string]getResult{}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var r getResult
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.URL != "" {
			out[r.URL] = r
		}
	}
	return out
}

type loopResult struct {
	Sent   int      `json:"sent"`
	Failed int      `json:"failed"`
	Errors []string `json:"errors"`
	// When the first and the last failed request were sent (zero: none
	// failed).
	FirstFailure time.Time `json:"first_failure"`
	LastFailure  time.Time `json:"last_failure"`
}

// loopDuring runs a client looping over urls from the Ingress
// controller's namespace (or through's), runs during once it is under way, then stops
// the client (netcheck stop, through kubectl exec) and returns what it
// counted: every request from before during began to after it ended.
func (c *nodeClient) loopDuring(prefix string, urls []string, during func()) loopResult {
	c.t.Helper()
	ctx := context.Background()
	// -duration only ends a client nobody stops: stop ends it, and the
	// alerts' phases alone took 10.5 minutes on a warm run (an exec into
	// a client that had ended at 10 failed the row).
	pod, ns := c.startLoop(prefix, append([]string{"-duration", "40m", "-interval", "20ms"}, urls...)...)
	defer func() { _, _ = c.n.Kubectl(ctx, "-n", ns, "delete", "pod", pod, "--wait=false") }()
	c.waitLog(pod, ns, `"ready":true`, 90*time.Second)
	during()
	out, err := c.n.Kubectl(ctx, "-n", ns, "exec", pod, "--", "/netcheck", "stop")
	if err != nil {
		logs, _ := c.n.Kubectl(ctx, "-n", ns, "logs", pod)
		c.t.Fatalf("netcheck stop: %v\n%s", err, logs)
	}
	var res loopResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil || res.Sent == 0 {
		c.t.Fatalf("the client's summary: %v\n%s", err, out)
	}
	return res
}

// podNames lists the pods of components.
func podNames(t *testing.T, n *Node, components ...string) []string {
	t.Helper()
	out, err := n.Kubectl(context.Background(), "-n", nodeNamespace, "get", "pods", "-l",
		"app.kubernetes.io/component in ("+strings.Join(components, ",")+")", "-o", "jsonpath={.items[*].metadata.name}")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(out)
	if len(names) == 0 {
		t.Fatalf("no pod of %v", components)
	}
	return names
}

// waitGone waits until the pods are deleted (their drain and stop done).
func waitGone(t *testing.T, n *Node, pods []string) {
	t.Helper()
	for _, p := range pods {
		if _, err := n.Kubectl(context.Background(), "-n", nodeNamespace, "wait", "--for=delete", "pod/"+p, "--timeout=90s"); err != nil && !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("pod %s not gone: %v", p, err)
		}
	}
}

// waitReplacementReady waits for a pod of component that is not one of
// old to be Ready.
func waitReplacementReady(t *testing.T, n *Node, component string, old []string) {
	t.Helper()
	var pod string
	if !waitFor(30*time.Second, 200*time.Millisecond, func() bool {
		for _, p := range podNames(t, n, component) {
			if !slices.Contains(old, p) {
				pod = p
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no new %s pod within 30s", component)
	}
	if _, err := n.Kubectl(context.Background(), "-n", nodeNamespace, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=90s"); err != nil {
		t.Fatalf("the new %s pod %s not ready: %v", component, pod, err)
	}
}

func waitAvailable(t *testing.T, n *Node, component string) {
	t.Helper()
	if _, err := n.Kubectl(context.Background(), "-n", nodeNamespace, "rollout", "status", "deployment/"+nodeRelease+"-tokendata-"+component, "--timeout=90s"); err != nil {
		t.Error(err)
	}
}

// redisKeys lists the keys in the release's Redis (redis-cli in its pod).
func redisKeys(t *testing.T, n *Node, pod string) map[string]bool {
	t.Helper()
	out, err := n.Kubectl(context.Background(), "-n", nodeNamespace, "exec", pod, "--", "redis-cli", "--scan")
	if err != nil {
		return nil
	}
	keys := map[string]bool{}
	for _, k := range strings.Fields(out) {
		keys[k] = true
	}
	return keys
}

// splitKeys parts keys into those whose name does not hold sub and those
// that do.
func splitKeys(keys map[string]bool, sub string) (without, with map[string]bool) {
	without, with = map[string]bool{}, map[string]bool{}
	for k := range keys {
		if strings.Contains(k, sub) {
			with[k] = true
		} else {
			without[k] = true
		}
	}
	return without, with
}

// hasAll reports whether have holds every key of want.
func hasAll(have, want map[string]bool) bool { return len(missingKeys(have, want)) == 0 }

// missingKeys are the keys of want that have lacks, sorted.
func missingKeys(have, want map[string]bool) []string {
	var out []string
	for k := range want {
		if !have[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// namespacedObjects lists the objects left in ns, but what Kubernetes puts
// in every namespace (the default ServiceAccount, the root CA ConfigMap)
// and events.
func namespacedObjects(t *testing.T, n *Node, ns string) []string {
	t.Helper()
	ctx := context.Background()
	kinds, err := n.Kubectl(ctx, "api-resources", "--verbs=list", "--namespaced", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, k := range strings.Fields(kinds) {
		if k == "events" || k == "events.events.k8s.io" {
			continue
		}
		out, err := n.Kubectl(ctx, "-n", ns, "get", k, "-o", "name", "--ignore-not-found")
		if err != nil {
			continue
		}
		for _, o := range strings.Fields(out) {
			if o == "serviceaccount/default" || o == "configmap/kube-root-ca.crt" {
				continue
			}
			list = append(list, o)
		}
	}
	sort.Strings(list)
	return list
}

func podStates(ctx context.Context, n *Node) string {
	out, _ := n.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	ev, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", "events", "--sort-by=.lastTimestamp")
	lines := strings.Split(strings.TrimSpace(ev), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return out + "\n" + strings.Join(lines, "\n")
}

// nodeMemory reports the memory each node uses with the release running:
// its pods' (its kubelet's kubepods cgroup) and its own processes' (the
// first node's include the control plane and the registry).
func nodeMemory(t *testing.T, n *Node, rep *nodeReport) {
	names, err := n.NodeNames(context.Background())
	if err != nil {
		t.Logf("node memory: %v", err)
		return
	}
	var each []string
	var allPods, allProcs int64
	for _, name := range names {
		cgroup, pids := n.NodeCgroup(name)
		b, err := os.ReadFile(filepath.Join(cgroup, "memory.usage_in_bytes"))
		if err != nil {
			t.Logf("node memory: %v", err)
			return
		}
		pods, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		var procs int64
		for _, proc := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kube-router", "containerd", "registry"} {
			pid, err := os.ReadFile(filepath.Join(pids, proc))
			if err != nil {
				continue
			}
			status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(status), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					procs += kb << 10
				}
			}
		}
		allPods += pods
		allProcs += procs
		each = append(each, fmt.Sprintf("%s: pods %d MiB, processes %d MiB", name, pods>>20, procs>>20))
	}
	rep.add("memory of the %d nodes with the release running: pods %d MiB (kubepods cgroups, page cache included), node processes %d MiB RSS (%s)",
		len(names), allPods>>20, allProcs>>20, strings.Join(each, "; "))
}

// startPortForward forwards a local port to target's port through the API
// server and kubelet (kubectl port-forward) and returns its URL.
func startPortForward(t *testing.T, n *Node, target string, port int) string {
	t.Helper()
	return startPortForwardNS(t, n, nodeNamespace, target, port)
}

func startPortForwardNS(t *testing.T, n *Node, ns, target string, port int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(n.Root, ".bin", "kubectl"), "-n", ns, "port-forward", "--address", "127.0.0.1", target, fmt.Sprintf(":%d", port))
	cmd.Env = append(withoutEnv(os.Environ(), "KUBECONFIG"), "KUBECONFIG="+n.Kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return "http://127.0.0.1:" + m[1]
		}
	}
	t.Fatalf("kubectl port-forward %s: no local port", target)
	return ""
}

// burn burns amount base units on the simulator's ledger and returns the
// supply after it.
func burn(t *testing.T, simURL string, amount uint64) string {
	t.Helper()
	resp, err := http.Post(simURL+"/_simulator/burn?amount="+strconv.FormatUint(amount, 10), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Supply string `json:"supply"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Supply == "" {
		t.Fatalf("burn: %d %v", resp.StatusCode, err)
	}
	return out.Supply
}

// nodeHolders is what the node test reads of /api/holders.
type nodeHolders struct {
	Method  string `json:"method"`
	Holders uint64 `json:"holders"`
	Slot    uint64 `json:"slot"`
	Live    struct {
		AnchorSlot uint64 `json:"anchor_slot"`
	} `json:"live"`
}

// readNodeHolders reads /api/holders from api; the zero value when it
// cannot.
func readNodeHolders(api string) nodeHolders {
	var h nodeHolders
	resp, err := http.Get(api + "/api/holders")
	if err != nil {
		return h
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&h)
	}
	return h
}

// postHolderChange makes a holder change on the simulator's ledger
// (POST /_simulator/holders/<change>) and returns its slot.
func postHolderChange(t *testing.T, simURL, change string) (out struct {
	Slot uint64 `json:"slot"`
}) {
	t.Helper()
	resp, err := http.Post(simURL+"/_simulator/holders/"+change, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Slot == 0 {
		t.Fatalf("holders/%s: %d %v", change, resp.StatusCode, err)
	}
	return out
}

// units writes base units as the decimal the API serves: trailing zeros
// trimmed, no point for a whole number.
func units(raw string, decimals int) string {
	for len(raw) <= decimals {
		raw = "0" + raw
	}
	whole, frac := raw[:len(raw)-decimals], strings.TrimRight(raw[len(raw)-decimals:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// skaffoldLocal runs skaffold's local profile on a copy of the sources
// (the test edits one): skaffold run builds the five images with
// hack/imagebuild, pushes them to the node's registry and deploys the
// chart; skaffold dev, after a change to the edge's sources, rebuilds the
// edge's image and rolls its Deployment to it.
func skaffoldLocal(t *testing.T, n *Node, rep *nodeReport) {
	ctx := context.Background()
	build := exec.Command("bash", filepath.Join(n.Root, "hack", "build-skaffold.sh"))
	build.Env = withoutEnv(os.Environ(), "GOWORK")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/build-skaffold.sh: %v\n%s", err, out)
	}
	const ns = "tokendata-skaffold"
	src := copySources(t, n.Root)
	for _, l := range []string{".bin", ".cluster"} {
		if err := os.Symlink(filepath.Join(n.Root, l), filepath.Join(src, l)); err != nil {
			t.Fatal(err)
		}
	}
	sk, err := os.ReadFile(filepath.Join(src, "skaffold.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sk = []byte(strings.Replace(string(sk), "namespace: tokendata\n", "namespace: "+ns+"\n", 1))
	if err := os.WriteFile(filepath.Join(src, "skaffold.yaml"), sk, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = n.Kubectl(ctx, "delete", "namespace", ns, "--ignore-not-found", "--wait=false") }()
	env := append(withoutEnv(os.Environ(), "KUBECONFIG", "GOWORK", "PATH"), "KUBECONFIG="+n.Kubeconfig,
		"PATH="+filepath.Join(n.Root, ".bin")+":"+os.Getenv("PATH"), "SKAFFOLD_UPDATE_CHECK=false", "SKAFFOLD_INTERACTIVE=false")
	skaffold := filepath.Join(n.Root, ".bin", "skaffold")
	args := []string{"-p", "local", "--default-repo", n.Registry + "/" + ns}

	start := time.Now()
	run := exec.CommandContext(ctx, skaffold, append([]string{"run"}, args...)...)
	run.Dir, run.Env = src, env
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("skaffold run -p local: %v\n%s", err, tail(string(out), 4000))
	}
	rep.add("skaffold run -p local (five images built and pushed, the chart deployed): %s", time.Since(start).Round(time.Second))
	image := func() string {
		out, _ := n.Kubectl(ctx, "-n", ns, "get", "deployment/tokendata-edge", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		return out
	}
	before := image()
	if !strings.HasPrefix(before, n.Registry+"/"+ns+"/") || !strings.Contains(before, "@sha256:") {
		t.Fatalf("skaffold deployed the edge as %q, want an image of the node's registry by digest", before)
	}
	if _, err := n.Kubectl(ctx, "-n", ns, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}

	dctx, stop := context.WithCancel(ctx)
	dev := exec.CommandContext(dctx, skaffold, append([]string{"dev", "--port-forward=false"}, args...)...)
	dev.Dir, dev.Env = src, env
	dev.Cancel = func() error { return dev.Process.Signal(os.Interrupt) }
	dev.WaitDelay = 2 * time.Minute
	var out syncBuffer
	dev.Stdout, dev.Stderr = &out, &out
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		_ = dev.Wait()
	}()
	if !waitFor(10*time.Minute, time.Second, func() bool { return strings.Contains(out.String(), "Watching for changes") }) {
		t.Fatalf("skaffold dev did not start watching:\n%s", tail(out.String(), 4000))
	}
	// A change to the edge's sources: its embedded OpenAPI document.
	spec := filepath.Join(src, "services", "edge", "openapi.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("skaffold-dev-%d", time.Now().UnixNano())
	b = []byte(strings.Replace(string(b), "title: tokendata public API\n", "title: tokendata public API "+marker+"\n", 1))
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	var after string
	if !waitFor(10*time.Minute, 2*time.Second, func() bool {
		after = image()
		return after != before && after != ""
	}) {
		t.Fatalf("skaffold dev did not redeploy the edge after its sources changed:\n%s", tail(out.String(), 4000))
	}
	if _, err := n.Kubectl(ctx, "-n", ns, "rollout", "status", "deployment/tokendata-edge", "--timeout=180s"); err != nil {
		t.Fatal(err)
	}
	rep.add("skaffold dev -p local: a change to the edge's sources to its new image rolled out: %s", time.Since(start).Round(time.Second))
	pf := startPortForwardNS(t, n, ns, "deployment/tokendata-edge", 8080)
	resp, err := http.Get(pf + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var doc struct {
		Info struct {
			Title string `json:"title"`
		} `json:"info"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || !strings.Contains(doc.Info.Title, marker) {
		t.Errorf("the redeployed edge serves the title %q (%v), want the changed source's %q", doc.Info.Title, err, marker)
	}
}

// copySources copies the repository's files (tracked, and untracked but
// not ignored) to a temporary directory.
func copySources(t *testing.T, from string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", from, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(from, f))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
