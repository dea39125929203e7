package chartcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAPIServer runs the chart against a real kube-apiserver (etcd and the
// pinned kube-apiserver on loopback, hack/build-kube.sh): for the defaults
// and every ci/*.yaml, a server-side dry-run apply of the render into a
// namespace that enforces PodSecurity "restricted", then a real helm
// install; then the life of one release through the upgrades an operator
// makes, asserting that the API server accepts each step and that pod
// templates change only when they should.
func TestAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no API server")
	}
	apiserver, kubectl, err := KubeBinaries(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	cl, err := StartCluster(ctx, apiserver, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	t.Logf("etcd and kube-apiserver ready in %s", time.Since(start).Round(time.Millisecond))
	k := func(t *testing.T, stdin []byte, args ...string) string {
		t.Helper()
		out, _, err := cl.Run(stdin, kubectl, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// The CRDs of the kinds the chart renders when asked: ServiceMonitor
	// and PrometheusRule (the YAML of prometheus-operator v0.94.1, the
	// version of the pinned Go types, in testdata/crds), HTTPRoute (from
	// the pinned sigs.k8s.io/gateway-api module itself).
	goList := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	goList.Env = append(withoutEnv(os.Environ(), "GOWORK"), "GOWORK=off")
	gw, err := goList.Output()
	if err != nil {
		t.Fatalf("the gateway-api module: %v", err)
	}
	gwCRDs := filepath.Join(strings.TrimSpace(string(gw)), "config", "crd", "standard")
	for _, f := range []string{
		filepath.Join("testdata", "crds", "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join("testdata", "crds", "monitoring.coreos.com_prometheusrules.yaml"),
		filepath.Join(gwCRDs, "gateway.networking.k8s.io_gateways.yaml"),
		filepath.Join(gwCRDs, "gateway.networking.k8s.io_httproutes.yaml"),
	} {
		k(t, nil, "apply", "--server-side", "-f", f)
	}
	// Retried: kubectl wait fails at once, rather than waiting, on a CRD
	// whose status has no conditions yet ("accessor error: <nil> is of the
	// type <nil>"), as a just-created one may on a loaded machine.
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, _, err := cl.Run(nil, kubectl, "wait", "--for=condition=Established", "--timeout=2s",
			"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com",
			"crd/httproutes.gateway.networking.k8s.io")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CRDs not Established after 60s: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}

	namespace := func(t *testing.T, name string) {
		t.Helper()
		k(t, nil, "create", "namespace", name)
		// enforce refuses a Pod (the helm test pod); warn makes kubectl print
		// what a Deployment's or StatefulSet's pods would violate.
		k(t, nil, "label", "namespace", name,
			"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest",
			"pod-security.kubernetes.io/warn=restricted", "pod-security.kubernetes.io/warn-version=latest")
	}
	// The namespace of monitoring.dashboards.namespace in the CI values.
	k(t, nil, "create", "namespace", "monitoring")

	cases := append([]string{""}, ciValues(t)...)
	for i, f := range cases {
		name := "defaults"
		if f != "" {
			name = strings.TrimSuffix(filepath.Base(f), ".yaml")
		}
		t.Run(name, func(t *testing.T) {
			ns := "ci-" + strings.TrimSuffix(strings.ReplaceAll(name, "-values", ""), "-")
			if i == 0 {
				ns = "ci-defaults"
			}
			namespace(t, ns)
			args := []string{"template", "t", chart.Dir, "--namespace", ns}
			if f != "" {
				args = append(args, "-f", f)
			}
			manifest, _, err := cl.Run(nil, chart.Helm, args...)
			if err != nil {
				t.Fatal(err)
			}
			_, stderr, err := cl.Run([]byte(manifest), kubectl, "apply", "--server-side", "--dry-run=server", "-n", ns, "-f", "-")
			if err != nil {
				t.Fatalf("server-side dry-run apply: %v", err)
			}
			if strings.Contains(stderr, "PodSecurity") || strings.Contains(stderr, "Warning") {
				t.Errorf("warnings of the API server:\n%s", stderr)
			}
			args = []string{"install", "t", chart.Dir, "--namespace", ns}
			if f != "" {
				args = append(args, "-f", f)
			}
			if _, stderr, err := cl.Run(nil, chart.Helm, args...); err != nil {
				t.Fatalf("helm install: %v", err)
			} else if strings.Contains(stderr, "PodSecurity") {
				t.Errorf("warnings of the API server:\n%s", stderr)
			}
		})
	}

	t.Run("notes", func(t *testing.T) {
		testNotes(t, cl, kubectl)
	})
	t.Run("upgrades", func(t *testing.T) {
		testUpgrades(t, cl, kubectl)
	})
}

// testUpgrades takes one release through the upgrades of a production
// life: chart version bump, Redis persistence on, off and on again, a
// resize the API server would refuse, a Redis password with every special
// character from an existing Secret, then a change of that password.
func testUpgrades(t *testing.T, cl *Cluster, kubectl string) {
	const ns = "upgrades"
	k := func(stdin []byte, args ...string) string {
		t.Helper()
		out, _, err := cl.Run(stdin, kubectl, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	k(nil, "create", "namespace", ns)
	k(nil, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")

	// A copy of the chart whose version can be bumped.
	dir := filepath.Join(t.TempDir(), "tokendata")
	if out, err := exec.Command("cp", "-r", chart.Dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the chart: %v: %s", err, out)
	}
	helm := func(args ...string) error {
		t.Helper()
		_, _, err := cl.Run(nil, chart.Helm, append(args, "--namespace", ns)...)
		return err
	}
	upgrade := func(what string, args ...string) {
		t.Helper()
		if err := helm(append([]string{"upgrade", "t", dir, "--reuse-values"}, args...)...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// templates returns every workload's pod template (as JSON), by name.
	templates := func() map[string]string {
		t.Helper()
		var list struct {
			Items []struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Spec struct {
					Template json.RawMessage `json:"template"`
				} `json:"spec"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(k(nil, "-n", ns, "get", "deployments,statefulsets", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, it := range list.Items {
			var b bytes.Buffer
			if err := json.Compact(&b, it.Spec.Template); err != nil {
				t.Fatal(err)
			}
			out[it.Kind+"/"+it.Metadata.Name] = b.String()
		}
		if len(out) != 6 {
			t.Fatalf("workloads %v, want the 5 Deployments and the Redis StatefulSet", len(out))
		}
		return out
	}
	// changed asserts which pod templates differ between two snapshots.
	changed := func(step string, before, after map[string]string, want ...string) {
		t.Helper()
		var got []string
		for n, tmpl := range after {
			if before[n] != tmpl {
				got = append(got, n)
			}
		}
		for _, n := range got {
			if !slices.Contains(want, n) {
				t.Errorf("%s: the pod template of %s changed (it would restart for nothing)", step, n)
			}
		}
		for _, n := range want {
			if !slices.Contains(got, n) {
				t.Errorf("%s: the pod template of %s did not change", step, n)
			}
		}
	}
	secret := func(name string) string {
		return k(nil, "-n", ns, "get", "secret", name, "-o", "jsonpath={.data.redis-password}")
	}
	services := []string{"Deployment/t-tokendata-edge", "Deployment/t-tokendata-supply", "Deployment/t-tokendata-market", "Deployment/t-tokendata-holders"}
	redis := "StatefulSet/t-tokendata-redis"

	if err := helm("install", "t", dir); err != nil {
		t.Fatalf("install: %v", err)
	}
	t0 := templates()
	password0 := secret("t-tokendata-redis")

	// 2. A chart version bump changes no pod template.
	chartYAML := filepath.Join(dir, "Chart.yaml")
	b, err := os.ReadFile(chartYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chartYAML, []byte(strings.Replace(string(b), "\nversion: ", "\nversion: 99.0.0-bump+", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	upgrade("chart version bump")
	t1 := templates()
	changed("chart version bump", t0, t1)
	if got := k(nil, "-n", ns, "get", "statefulset", "t-tokendata-redis", "-o", `jsonpath={.metadata.labels.helm\.sh/chart}`); !strings.HasPrefix(got, "tokendata-99.0.0-bump") {
		t.Errorf("the upgrade did not relabel the objects: helm.sh/chart %q", got)
	}
	// 3. The generated password is kept across upgrades.
	if p := secret("t-tokendata-redis"); p != password0 {
		t.Error("the generated Redis password changed on upgrade")
	}

	// 1. Persistence on, off and on again: accepted, Redis alone rolls,
	// the claim survives being turned off.
	upgrade("persistence on", "--set", "redis.persistence.enabled=true")
	t2 := templates()
	changed("persistence on", t1, t2, redis)
	k(nil, "-n", ns, "get", "pvc", "t-tokendata-redis-data")
	upgrade("persistence off", "--set", "redis.persistence.enabled=false")
	t3 := templates()
	changed("persistence off", t2, t3, redis)
	if _, _, err := cl.Run(nil, kubectl, "-n", ns, "get", "pvc", "t-tokendata-redis-data"); err != nil {
		t.Errorf("the claim was deleted when persistence was turned off: %v", err)
	}
	upgrade("persistence on again", "--set", "redis.persistence.enabled=true")
	changed("persistence on again", t3, templates(), redis)
	// A resize of a claim not bound (none binds here: no controllers)
	// stops early with what to do, and changes nothing.
	before := templates()
	err = helm("upgrade", "t", dir, "--reuse-values", "--set", "redis.persistence.size=2Gi")
	if err == nil || !strings.Contains(err.Error(), "redis.persistence.size") || !strings.Contains(err.Error(), "not bound") {
		t.Errorf("resize of an unbound claim: %v, want the chart's early refusal", err)
	}
	changed("refused resize", before, templates())

	// 4. A password with every special character, from an existing Secret:
	// Redis and the four services roll; the URL does not carry it.
	const special = "p/a#s?s%w@o:r d&=+;$!*'()[],~`\"^{}|<>\\"
	k(nil, "-n", ns, "create", "secret", "generic", "redis-auth", "--from-literal=redis-password="+special)
	before = templates()
	upgrade("existing Secret", "--set", "redis.auth.existingSecret=redis-auth")
	t4 := templates()
	changed("existing Secret", before, t4, append([]string{redis}, services...)...)
	for _, n := range services {
		if strings.Contains(t4[n], "p/a#s") {
			t.Errorf("%s: the password is in the pod template", n)
		}
		if !strings.Contains(t4[n], `"name":"REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"key":"redis-password","name":"redis-auth"}}`) {
			t.Errorf("%s: REDIS_PASSWORD is not from the Secret redis-auth", n)
		}
	}
	if _, _, err := cl.Run(nil, kubectl, "-n", ns, "get", "secret", "t-tokendata-redis"); err == nil {
		t.Error("the generated Secret is still there beside the existing one")
	}
	// The Secret changes: the next upgrade rolls Redis and its clients.
	k([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"redis-auth"},"stringData":{"redis-password":"another %2F password"}}`),
		"-n", ns, "apply", "-f", "-")
	upgrade("Secret changed")
	changed("Secret changed", t4, templates(), append([]string{redis}, services...)...)
	// And an upgrade that changes nothing restarts nothing.
	t5 := templates()
	upgrade("no change")
	changed("no change", t5, templates())
}

// testNotes: what helm install prints. The Gateway URL takes the scheme of
// the listener the route attaches to (read from the Gateway), the OpenAPI
// document is listed, and the demo-token warning shows only when the
// chart's example token file is what the services get.
func testNotes(t *testing.T, cl *Cluster, kubectl string) {
	const ns = "notes"
	gateway := `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"gw"},
"spec":{"gatewayClassName":"x","listeners":[{"name":"web","protocol":"HTTP","port":80},{"name":"tls","protocol":"HTTPS","port":443,
"tls":{"certificateRefs":[{"name":"cert"}]}}]}}`
	for _, args := range [][]string{{"create", "namespace", ns}, {"-n", ns, "apply", "-f", "-"}} {
		stdin := []byte(nil)
		if args[0] == "-n" {
			stdin = []byte(gateway)
		}
		if _, _, err := cl.Run(stdin, kubectl, args...); err != nil {
			t.Fatal(err)
		}
	}
	notes := func(args ...string) string {
		t.Helper()
		out, _, err := cl.Run(nil, chart.Helm, append([]string{"install", "t", chart.Dir, "-n", ns, "--dry-run=server"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(out, "NOTES:")
		if i < 0 {
			t.Fatalf("no NOTES in:\n%s", out)
		}
		return out[i:]
	}
	gw := []string{"--set", "gatewayAPI.enabled=true", "--set", "gatewayAPI.parentRefs[0].name=gw", "--set", "gatewayAPI.hostnames[0]=api.example.org"}
	for section, want := range map[string]string{"tls": "https://api.example.org/api/health", "web": "http://api.example.org/api/health"} {
		if n := notes(append(gw, "--set", "gatewayAPI.parentRefs[0].sectionName="+section)...); !strings.Contains(n, want) {
			t.Errorf("listener %s: NOTES without %s:\n%s", section, want, n)
		}
	}
	n := notes()
	if !strings.Contains(n, "/api/openapi.json") || !strings.Contains(n, "WARNING: token.file still holds the chart's example") {
		t.Errorf("defaults: NOTES without /api/openapi.json or the demo-token warning:\n%s", n)
	}
	if n := notes("--set", "token.existingConfigMap=mine"); strings.Contains(n, "WARNING: token.file") {
		t.Errorf("token.existingConfigMap set: NOTES still warn about the example token file:\n%s", n)
	}
	// The live demo says that everything is simulated, and neither warns
	// about the example token nor asks for an RPC Secret.
	if n := notes("--set", "simulator.enabled=true"); !strings.Contains(n, "LIVE DEMO (simulator.enabled)") ||
		strings.Contains(n, "WARNING: token.file") || strings.Contains(n, "upstreams.rpc.existingSecret is empty") {
		t.Errorf("simulator.enabled: NOTES without the live-demo notice, or with the real-token warnings:\n%s", n)
	}
}
