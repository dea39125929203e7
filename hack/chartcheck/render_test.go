package chartcheck

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current chart")

var (
	root    string
	chart   Chart
	decoder *Decoder
)

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if root, err = RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helm, err := Helm(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	chart = Chart{Helm: helm, Dir: filepath.Join(root, "charts", "tokendata"), Namespace: "tokendata", Release: "t"}
	if decoder, err = NewDecoder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}

// ciValues lists charts/tokendata/ci/*.yaml.
func ciValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart.Dir, "ci", "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("ci values files: %v (found %d, want the whole matrix)", err, len(files))
	}
	// The development values skaffold deploys to kind pass the same checks.
	return append(files, filepath.Join(chart.Dir, "values-dev.yaml"))
}

// render renders and decodes strictly, failing the test on any error.
func render(t *testing.T, args ...string) Set {
	t.Helper()
	out, err := chart.Template(args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decoder.DecodeAll(out)
	if err != nil {
		t.Fatalf("strict decoding of helm template %v:\n%v", args, err)
	}
	return Set(objs)
}

func TestLintStrict(t *testing.T) {
	if out, err := chart.Lint(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range ciValues(t) {
		if out, err := chart.Lint("-f", f); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestCIValues renders every CI values file, decodes every object
// strictly, checks the policies, and compares with the golden render.
func TestCIValues(t *testing.T) {
	for _, f := range ciValues(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, err := chart.Template("-f", f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decoder.DecodeAll(out)
			if err != nil {
				t.Fatalf("strict decoding:\n%v", err)
			}
			set := Set(objs)
			if err := set.Check(); err != nil {
				t.Errorf("policies:\n%v", err)
			}
			golden(t, filepath.Join("testdata", name+".golden"), normalize(out))
		})
	}
}

// authChecksum matches the pod annotation derived from the generated
// Redis password.
var authChecksum = regexp.MustCompile(`(?m)^(\s+checksum/redis-auth: )[0-9a-f]{64}$`)

// secretData matches the values under a Secret's data (generated
// passwords change on every render).
var secretData = regexp.MustCompile(`(?m)^(  [A-Za-z0-9_.-]+: )"?[A-Za-z0-9+/=]{8,}"?$`)

var secretKind = regexp.MustCompile(`(?m)^kind: Secret$`)

// normalize makes a render stable for golden files.
func normalize(stream []byte) []byte {
	docs := SplitDocuments(stream)
	var b bytes.Buffer
	for _, d := range docs {
		y := d.YAML
		if i := bytes.Index(y, []byte("\ndata:\n")); i >= 0 && secretKind.Match(y) {
			y = append(y[:i:i], secretData.ReplaceAll(y[i:], []byte(`${1}"<generated>"`))...)
		}
		y = authChecksum.ReplaceAll(y, []byte(`${1}<generated>`))
		b.WriteString("---")
		b.Write(y)
	}
	return b.Bytes()
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the render (run go test -update and review the diff)", path)
	}
}

// TestDecoderCatches proves the strict decoding fails where it must.
func TestDecoderCatches(t *testing.T) {
	const ok = `apiVersion: v1
kind: ConfigMap
metadata:
  name: x
data:
  a: b
`
	if _, err := decoder.Decode(Document{YAML: []byte(ok)}); err != nil {
		t.Fatalf("a valid object is refused: %v", err)
	}
	cases := map[string]string{
		"unknown field": `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  replica: 2
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i:1}]}
`,
		"case-only typo": `apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  selector: {a: b}
  ports: [{port: 80, targetport: 8080}]
`,
		"wrong type": `apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  selector: {a: b}
  ports: [{port: "eighty"}]
`,
		"duplicate key": `apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  name: y
`,
		"nested unknown field": `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers:
    - name: c
      image: i:1
      securityContext: {readOnlyRootFileSystem: true}
`,
		"duplicate list-map key (schema only)": `apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers:
    - name: c
      image: i:1
      env: [{name: A, value: "1"}, {name: A, value: "2"}]
`,
		"unknown kind": `apiVersion: example.com/v1
kind: Widget
metadata: {name: x}
`,
		"CRD unknown field": `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: ops, intervall: 30s}]
`,
		"CRD case-only typo": `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: x}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendrefs: [{name: s, port: 80}]}]
`,
		"CRD wrong type": `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: x}
spec:
  groups: [{name: g, rules: [{alert: A, expr: up == 0, labels: [severity]}]}]
`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decoder.Decode(Document{Source: name, YAML: []byte(doc)}); err == nil {
				t.Errorf("accepted:\n%s", doc)
			} else {
				t.Log(err)
			}
		})
	}
}

// TestPoliciesCatch proves the policies fail where they must, on renders
// spoiled after the fact.
func TestPoliciesCatch(t *testing.T) {
	base := render(t)
	if err := base.Check(); err != nil {
		t.Fatalf("defaults fail the policies: %v", err)
	}
	edge := func(s Set) *appsv1.Deployment {
		o, ok := s.Get("Deployment", "t-tokendata-edge")
		if !ok {
			t.Fatal("no edge Deployment")
		}
		return o.Typed.(*appsv1.Deployment)
	}
	spoil := map[string]func(s Set){
		"writable root": func(s Set) {
			f := false
			edge(s).Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &f
		},
		"no probes":    func(s Set) { edge(s).Spec.Template.Spec.Containers[0].ReadinessProbe = nil },
		"no requests":  func(s Set) { edge(s).Spec.Template.Spec.Containers[0].Resources.Requests = nil },
		"latest image": func(s Set) { edge(s).Spec.Template.Spec.Containers[0].Image = "ghcr.io/tokendata/edge:latest" },
		"token mounted": func(s Set) {
			tr := true
			edge(s).Spec.Template.Spec.AutomountServiceAccountToken = &tr
		},
		"selector mismatch":   func(s Set) { edge(s).Spec.Template.Labels["app.kubernetes.io/component"] = "other" },
		"chart label on pods": func(s Set) { edge(s).Spec.Template.Labels["helm.sh/chart"] = "tokendata-0.1.0" },
		"serviceName not headless": func(s Set) {
			o, ok := s.Get("Service", "t-tokendata-redis-headless")
			if !ok {
				t.Fatal("no headless Redis Service")
			}
			o.Typed.(*corev1.Service).Spec.ClusterIP = ""
		},
		"replicas under HPA": func(s Set) {
			n := int32(3)
			edge(s).Spec.Replicas = &n
		},
		"secret in clear": func(s Set) {
			c := &edge(s).Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "SOLANA_RPC_URL", Value: "https://rpc.example/?api-key=k"})
		},
		"key in an in-cluster RPC URL": func(s Set) {
			c := &edge(s).Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "SOLANA_RPC_URL", Value: "http://rpc.infra.svc:8899/?api-key=k"})
		},
		"credentials in an in-cluster RPC URL": func(s Set) {
			c := &edge(s).Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "HOLDERS_RPC_URL", Value: "http://user:pass@rpc.infra.svc:8899"})
		},
		"capabilities kept": func(s Set) {
			edge(s).Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Drop = nil
		},
	}
	for name, f := range spoil {
		t.Run(name, func(t *testing.T) {
			s := render(t)
			f(s)
			if err := s.Check(); err == nil {
				t.Error("the policies accept it")
			}
		})
	}
	t.Run("PDB on one replica", func(t *testing.T) {
		s := render(t, "--set", "edge.autoscaling.enabled=false", "--set", "edge.replicaCount=1")
		if _, ok := s.Get("PodDisruptionBudget", "t-tokendata-edge"); ok {
			t.Fatal("the chart renders a PDB for one replica")
		}
		pdbs := render(t).Of("PodDisruptionBudget")
		s = append(s, pdbs...)
		if err := s.CheckDisruptionAndScaling(); err == nil {
			t.Error("the policies accept a PDB over one replica")
		}
	})
}

func env(t *testing.T, s Set, deployment, name string) (corev1.EnvVar, bool) {
	t.Helper()
	o, ok := s.Get("Deployment", deployment)
	if !ok {
		t.Fatalf("no Deployment %s", deployment)
	}
	for _, e := range o.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func has(s Set, kind, name string) bool { _, ok := s.Get(kind, name); return ok }

// TestConditionals covers each conditional of the chart.
func TestConditionals(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, s Set)
	}{
		{"defaults", nil, func(t *testing.T, s Set) {
			for _, k := range []string{"ServiceMonitor", "PrometheusRule", "Ingress", "HTTPRoute"} {
				if len(s.Of(k)) != 0 {
					t.Errorf("%s rendered by default", k)
				}
			}
			if has(s, "ConfigMap", "t-tokendata-dashboards") {
				t.Error("dashboards rendered by default")
			}
			if !has(s, "HorizontalPodAutoscaler", "t-tokendata-edge") || !has(s, "PodDisruptionBudget", "t-tokendata-edge") {
				t.Error("edge: no HPA or PDB")
			}
			if !has(s, "PodDisruptionBudget", "t-tokendata-cache") || has(s, "HorizontalPodAutoscaler", "t-tokendata-cache") {
				t.Error("cache: want a PDB (2 replicas) and no HPA")
			}
			for _, c := range []string{"supply", "market", "holders"} {
				if has(s, "PodDisruptionBudget", "t-tokendata-"+c) || has(s, "HorizontalPodAutoscaler", "t-tokendata-"+c) {
					t.Errorf("%s: a PDB or HPA for one replica", c)
				}
				d, _ := s.Get("Deployment", "t-tokendata-"+c)
				if r := d.Typed.(*appsv1.Deployment).Spec.Replicas; r == nil || *r != 1 {
					t.Errorf("%s: replicas %v, want 1", c, r)
				}
			}
			if !has(s, "StatefulSet", "t-tokendata-redis") || !has(s, "Secret", "t-tokendata-redis") {
				t.Error("no in-chart Redis with its Secret")
			}
			// The password apart from the URL: any character works.
			if e, _ := env(t, s, "t-tokendata-edge", "REDIS_URL"); e.Value != "redis://t-tokendata-redis:6379/0" {
				t.Errorf("edge REDIS_URL = %q", e.Value)
			}
			if e, _ := env(t, s, "t-tokendata-edge", "REDIS_PASSWORD"); e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "t-tokendata-redis" {
				t.Errorf("edge REDIS_PASSWORD = %+v, want from the Secret", e)
			}
			for _, c := range []string{"edge", "supply", "market", "holders"} {
				d, _ := s.Get("Deployment", "t-tokendata-"+c)
				if d.Typed.(*appsv1.Deployment).Spec.Template.Annotations["checksum/redis-auth"] == "" {
					t.Errorf("%s: no checksum/redis-auth: a password change would not roll it", c)
				}
			}
			if _, ok := env(t, s, "t-tokendata-edge", "SOLANA_RPC_URL"); ok {
				t.Error("the edge gets an RPC URL")
			}
			if !has(s, "Pod", "t-tokendata-test") || !has(s, "ConfigMap", "t-tokendata-token") {
				t.Error("no helm test pod or token ConfigMap")
			}
			if e, _ := env(t, s, "t-tokendata-supply", "TOKEN_CONFIG"); e.Value != "/etc/tokendata/token.yaml" {
				t.Errorf("TOKEN_CONFIG = %q", e.Value)
			}
			np, ok := s.Policy("edge")
			if !ok || !ingressFromComponent(np, "cache") {
				t.Error("edge: no ingress from the cache tier")
			}
			for _, c := range []string{"supply", "market", "holders"} {
				np, ok := s.Policy(c)
				if !ok || !egressPort(np, 443) || !egressPort(np, 53) || !egressPort(np, 6379) {
					t.Errorf("%s: egress lacks upstream HTTPS, DNS or Redis", c)
				}
			}
			if np, ok := s.Policy("edge"); !ok || egressPort(np, 443) {
				t.Error("edge: may reach the internet")
			}
			if np, ok := s.Policy("redis"); !ok || len(np.Spec.Egress) != 0 || len(np.Spec.Ingress[0].From) != 4 {
				t.Error("redis: want ingress from the four services only and no egress")
			}
		}},
		{"cache tier drains before nginx stops; the test retries and leaves nothing", nil, func(t *testing.T, s Set) {
			d, _ := s.Get("Deployment", "t-tokendata-cache")
			spec := d.Typed.(*appsv1.Deployment).Spec.Template.Spec
			c := spec.Containers[0]
			if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil ||
				strings.Join(c.Lifecycle.PreStop.Exec.Command, " ") != "sleep 15" {
				t.Errorf("cache: preStop %+v, want sleep 15 (cache.drainDelaySeconds)", c.Lifecycle)
			}
			if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= 15+5 {
				t.Errorf("cache: grace %v leaves no room for the drain and nginx's shutdown", g)
			}
			// Ready once it has reached an edge (its cache is empty), then
			// ready on nginx alone (stale-if-error while the edges are down).
			if p := c.StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/api/health" {
				t.Errorf("cache: startup probe %+v, want the edge's /api/health through nginx", p)
			}
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/nginx-healthz" {
				t.Errorf("cache: readiness probe %+v, want /nginx-healthz", p)
			}
			pod, _ := s.Get("Pod", "t-tokendata-test")
			p := pod.Typed.(*corev1.Pod)
			if pol := p.Annotations["helm.sh/hook-delete-policy"]; !strings.Contains(pol, "hook-failed") || !strings.Contains(pol, "hook-succeeded") {
				t.Errorf("test pod: delete policy %q: a failed test pod would outlive helm uninstall", pol)
			}
			if !strings.Contains(p.Annotations["helm.sh/hook-output-log-policy"], "hook-failed") {
				t.Error("test pod: its log is not printed on failure before it is deleted")
			}
			script := strings.Join(p.Spec.Containers[0].Args, "\n")
			if !strings.Contains(script, "until body=$(wget") || !strings.Contains(script, "deadline=$(( $(date +%s) + 60 ))") {
				t.Errorf("test pod: the first request is not retried within tests.connectTimeoutSeconds (60):\n%s", script)
			}
			np, ok := s.Get("NetworkPolicy", "t-tokendata-test")
			if !ok || !strings.Contains(np.U.GetAnnotations()["helm.sh/hook-delete-policy"], "hook-failed") {
				t.Error("the test's NetworkPolicy would outlive a failed test")
			}
		}},
		{"cache tier without a drain", []string{"--set", "cache.drainDelaySeconds=0"}, func(t *testing.T, s Set) {
			d, _ := s.Get("Deployment", "t-tokendata-cache")
			if l := d.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Lifecycle; l != nil {
				t.Errorf("cache: lifecycle %+v with drainDelaySeconds 0", l)
			}
		}},
		{"edge HPA off, one replica", []string{"--set", "edge.autoscaling.enabled=false", "--set", "edge.replicaCount=1"}, func(t *testing.T, s Set) {
			if has(s, "HorizontalPodAutoscaler", "t-tokendata-edge") || has(s, "PodDisruptionBudget", "t-tokendata-edge") {
				t.Error("HPA or PDB for one fixed replica")
			}
		}},
		{"edge HPA off, three replicas", []string{"--set", "edge.autoscaling.enabled=false", "--set", "edge.replicaCount=3"}, func(t *testing.T, s Set) {
			d, _ := s.Get("Deployment", "t-tokendata-edge")
			if r := d.Typed.(*appsv1.Deployment).Spec.Replicas; r == nil || *r != 3 || !has(s, "PodDisruptionBudget", "t-tokendata-edge") {
				t.Errorf("replicas %v, or no PDB", r)
			}
		}},
		{"pdb off", []string{"--set", "edge.pdb.enabled=false"}, func(t *testing.T, s Set) {
			if has(s, "PodDisruptionBudget", "t-tokendata-edge") {
				t.Error("PDB rendered")
			}
		}},
		{"cache off", []string{"--set", "cache.enabled=false", "--set", "ingress.enabled=true"}, func(t *testing.T, s Set) {
			if has(s, "Deployment", "t-tokendata-cache") || has(s, "ConfigMap", "t-tokendata-cache") {
				t.Error("cache tier rendered")
			}
			ing, _ := s.Get("Ingress", "t-tokendata")
			if b := ing.Typed.(*networkingv1.Ingress).Spec.Rules[0].HTTP.Paths[0].Backend.Service; b.Name != "t-tokendata-edge" || b.Port.Number != 8080 {
				t.Errorf("ingress backend %+v, want the edge", b)
			}
		}},
		{"ingress", []string{"--set", "ingress.enabled=true", "--set", "ingress.className=nginx"}, func(t *testing.T, s Set) {
			ing, ok := s.Get("Ingress", "t-tokendata")
			if !ok {
				t.Fatal("no Ingress")
			}
			spec := ing.Typed.(*networkingv1.Ingress).Spec
			if b := spec.Rules[0].HTTP.Paths[0].Backend.Service; b.Name != "t-tokendata-cache" || *spec.IngressClassName != "nginx" {
				t.Errorf("ingress to %s class %s, want the cache tier, nginx", b.Name, *spec.IngressClassName)
			}
		}},
		{"ingress of the events stream", []string{"--set", "ingress.enabled=true", "--set", "ingress.className=nginx",
			"--set", "ingress.annotations.cert-manager\\.io/cluster-issuer=le", "--set", "ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/whitelist-source-range=10.0.0.0/8",
			"--set", "ingress.tls[0].secretName=api-tls", "--set", "ingress.tls[0].hosts[0]=api.example.com"}, func(t *testing.T, s Set) {
			testEventsIngress(t, s)
		}},
		{"ingress of the events stream off", []string{"--set", "ingress.enabled=true", "--set", "ingress.events.enabled=false"}, func(t *testing.T, s Set) {
			if has(s, "Ingress", "t-tokendata-events") || !has(s, "Ingress", "t-tokendata") {
				t.Error("want the main Ingress only")
			}
		}},
		{"gateway", []string{"--set", "gatewayAPI.enabled=true", "--set", "gatewayAPI.parentRefs[0].name=gw"}, func(t *testing.T, s Set) {
			testEventsRoute(t, s, "1h", "1h")
		}},
		{"gateway, events timeouts disabled", []string{"--set", "gatewayAPI.enabled=true", "--set", "gatewayAPI.parentRefs[0].name=gw",
			"--set", "gatewayAPI.events.timeouts.request=0s", "--set", "gatewayAPI.events.timeouts.backendRequest=0s"}, func(t *testing.T, s Set) {
			testEventsRoute(t, s, "0s", "0s")
		}},
		{"gateway, events rule off", []string{"--set", "gatewayAPI.enabled=true", "--set", "gatewayAPI.parentRefs[0].name=gw", "--set", "gatewayAPI.events.enabled=false"}, func(t *testing.T, s Set) {
			r, ok := s.Get("HTTPRoute", "t-tokendata")
			if !ok {
				t.Fatal("no HTTPRoute")
			}
			for _, rule := range r.Typed.(*gatewayv1.HTTPRoute).Spec.Rules {
				if rule.Timeouts != nil || (len(rule.Matches) == 1 && *rule.Matches[0].Path.Value == "/api/events") {
					t.Errorf("a rule for the events stream: %+v", rule)
				}
			}
		}},
		{"cache tier: the events stream", nil, func(t *testing.T, s Set) {
			testEventsLocation(t, s, "1h", 256)
		}},
		{"cache tier: the events stream, values", []string{"--set", "cache.nginx.events.readTimeout=2h", "--set", "cache.nginx.events.maxStreams=0"}, func(t *testing.T, s Set) {
			testEventsLocation(t, s, "2h", 0)
		}},
		{"monitoring", []string{"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.dashboards.enabled=true"}, func(t *testing.T, s Set) {
			if !has(s, "ServiceMonitor", "t-tokendata") || !has(s, "PrometheusRule", "t-tokendata") {
				t.Error("no ServiceMonitor or PrometheusRule")
			}
			cm, ok := s.Get("ConfigMap", "t-tokendata-dashboards")
			if !ok || cm.Typed.(*corev1.ConfigMap).Labels["grafana_dashboard"] != "1" {
				t.Fatal("no dashboards ConfigMap for the sidecar")
			}
			data := cm.Typed.(*corev1.ConfigMap).Data
			if len(data) != 3 {
				t.Errorf("the dashboards ConfigMap carries %d dashboards, want 3", len(data))
			}
			for _, name := range []string{"tokendata-api.json", "tokendata-collectors.json", "tokendata-token.json"} {
				if want, _ := os.ReadFile(filepath.Join(chart.Dir, "files", "dashboards", name)); len(want) == 0 || cm.Typed.(*corev1.ConfigMap).Data[name] != strings.TrimRight(string(want), "\n") {
					t.Errorf("the dashboards ConfigMap does not carry %s as committed", name)
				}
			}
			metricsServices := 0
			for _, o := range s.Of("Service") {
				if o.Typed.(*corev1.Service).Labels["tokendata.io/metrics"] == "true" {
					metricsServices++
				}
			}
			if metricsServices != 4 {
				t.Errorf("%d Services carry the scrape label, want 4", metricsServices)
			}
		}},
		{"network policies off", []string{"--set", "networkPolicy.enabled=false"}, func(t *testing.T, s Set) {
			if n := len(s.Of("NetworkPolicy")); n != 0 {
				t.Errorf("%d NetworkPolicies", n)
			}
		}},
		{"public from", []string{"--set", "networkPolicy.publicFrom[0].namespaceSelector.matchLabels.team=edge"}, func(t *testing.T, s Set) {
			np, _ := s.Policy("cache")
			if len(np.Spec.Ingress[0].From) != 2 {
				t.Errorf("cache ingress from %v, want the peer and the test pod", np.Spec.Ingress[0].From)
			}
		}},
		{"tests off", []string{"--set", "tests.enabled=false"}, func(t *testing.T, s Set) {
			if len(s.Of("Pod")) != 0 {
				t.Error("test pod rendered")
			}
		}},
		{"external redis secret", []string{"--set", "redis.enabled=false", "--set", "externalRedis.existingSecret=r"}, func(t *testing.T, s Set) {
			if has(s, "StatefulSet", "t-tokendata-redis") || len(s.Of("Secret")) != 0 {
				t.Error("in-chart Redis rendered")
			}
			e, _ := env(t, s, "t-tokendata-market", "REDIS_URL")
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "r" || e.ValueFrom.SecretKeyRef.Key != "redis-url" {
				t.Errorf("REDIS_URL %+v, want from Secret r", e)
			}
			np, _ := s.Policy("edge")
			if !egressPort(np, 26379) {
				t.Error("no egress to Sentinel ports")
			}
		}},
		{"external redis url", []string{"--set", "redis.enabled=false", "--set", `externalRedis.url=redis-sentinel://s0:26379\,s1:26379/m`}, func(t *testing.T, s Set) {
			if e, _ := env(t, s, "t-tokendata-edge", "REDIS_URL"); e.Value != "redis-sentinel://s0:26379,s1:26379/m" {
				t.Errorf("REDIS_URL %q", e.Value)
			}
		}},
		{"redis existing secret, persistence", []string{"--set", "redis.auth.existingSecret=mine", "--set", "redis.persistence.enabled=true"}, func(t *testing.T, s Set) {
			if len(s.Of("Secret")) != 0 {
				t.Error("a Secret is generated although one exists")
			}
			st, _ := s.Get("StatefulSet", "t-tokendata-redis")
			sts := st.Typed.(*appsv1.StatefulSet)
			if len(sts.Spec.VolumeClaimTemplates) != 0 {
				t.Error("volumeClaimTemplates (immutable: persistence could not be switched on an existing release)")
			}
			claim := ""
			for _, v := range sts.Spec.Template.Spec.Volumes {
				if v.Name == "data" && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			pvc, ok := s.Get("PersistentVolumeClaim", "t-tokendata-redis-data")
			if !ok || claim != "t-tokendata-redis-data" {
				t.Errorf("data volume from claim %q, claim rendered %v", claim, ok)
			} else if pvc.Typed.(*corev1.PersistentVolumeClaim).Annotations["helm.sh/resource-policy"] != "keep" {
				t.Error("the claim is not kept by Helm when persistence is turned off")
			}
			if e, _ := env(t, s, "t-tokendata-edge", "REDIS_PASSWORD"); e.ValueFrom.SecretKeyRef.Name != "mine" {
				t.Error("REDIS_PASSWORD not from the existing Secret")
			}
		}},
		{"rpc secret", []string{"--set", "upstreams.rpc.existingSecret=rpc"}, func(t *testing.T, s Set) {
			if e, ok := env(t, s, "t-tokendata-supply", "SOLANA_RPC_URL"); !ok || e.ValueFrom.SecretKeyRef.Name != "rpc" {
				t.Error("supply: SOLANA_RPC_URL not from the Secret")
			}
			if e, ok := env(t, s, "t-tokendata-holders", "HOLDERS_RPC_URL"); !ok || !*e.ValueFrom.SecretKeyRef.Optional {
				t.Error("holders: HOLDERS_RPC_URL not from the Secret (optional)")
			}
			if _, ok := env(t, s, "t-tokendata-holders", "HOLDERS_CROSSCHECK_RPC_URL"); ok {
				t.Error("holders: HOLDERS_CROSSCHECK_RPC_URL set without holdersCrosscheckUrlKey (no cross-check is the default)")
			}
			if _, ok := env(t, s, "t-tokendata-holders", "HOLDERS_WS_URL"); ok {
				t.Error("holders: HOLDERS_WS_URL set without holdersWsUrlKey (derived from the RPC URL is the default)")
			}
			for _, c := range []string{"edge", "market"} {
				if _, ok := env(t, s, "t-tokendata-"+c, "SOLANA_RPC_URL"); ok {
					t.Errorf("%s gets the RPC URL", c)
				}
			}
		}},
		{"rpc secret with a second holder source", []string{"--set", "upstreams.rpc.existingSecret=rpc",
			"--set", "upstreams.rpc.holdersCrosscheckUrlKey=holders-second"}, func(t *testing.T, s Set) {
			e, ok := env(t, s, "t-tokendata-holders", "HOLDERS_CROSSCHECK_RPC_URL")
			if !ok || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != "rpc" || e.ValueFrom.SecretKeyRef.Key != "holders-second" {
				t.Fatalf("holders: HOLDERS_CROSSCHECK_RPC_URL %+v, want the Secret rpc's key holders-second", e)
			}
			if o := e.ValueFrom.SecretKeyRef.Optional; o != nil && *o {
				t.Error("holders: HOLDERS_CROSSCHECK_RPC_URL optional: a named key that is missing would turn the cross-check off unseen")
			}
			for _, c := range []string{"edge", "supply", "market"} {
				if _, ok := env(t, s, "t-tokendata-"+c, "HOLDERS_CROSSCHECK_RPC_URL"); ok {
					t.Errorf("%s gets HOLDERS_CROSSCHECK_RPC_URL", c)
				}
			}
			for _, o := range s.Of("ConfigMap") {
				for k, v := range o.Typed.(*corev1.ConfigMap).Data {
					if strings.Contains(k, "HOLDERS_CROSSCHECK") || strings.Contains(v, "HOLDERS_CROSSCHECK_RPC_URL") || strings.Contains(v, "holders-second") {
						t.Errorf("ConfigMap %s key %s names the second holder source", o.Typed.(*corev1.ConfigMap).Name, k)
					}
				}
			}
		}},
		{"rpc secret with the holders node's PubSub URL", []string{"--set", "upstreams.rpc.existingSecret=rpc",
			"--set", "upstreams.rpc.holdersWsUrlKey=holders-ws"}, func(t *testing.T, s Set) {
			e, ok := env(t, s, "t-tokendata-holders", "HOLDERS_WS_URL")
			if !ok || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != "rpc" || e.ValueFrom.SecretKeyRef.Key != "holders-ws" {
				t.Fatalf("holders: HOLDERS_WS_URL %+v, want the Secret rpc's key holders-ws", e)
			}
			if o := e.ValueFrom.SecretKeyRef.Optional; o != nil && *o {
				t.Error("holders: HOLDERS_WS_URL optional: a named key that is missing would fall back to the derived URL unseen")
			}
			for _, c := range []string{"edge", "supply", "market"} {
				if _, ok := env(t, s, "t-tokendata-"+c, "HOLDERS_WS_URL"); ok {
					t.Errorf("%s gets HOLDERS_WS_URL", c)
				}
			}
		}},
		{"rpc secret, a key per ledger node", []string{"--set", "upstreams.rpc.existingSecret=rpc",
			"--set", "upstreams.rpc.nodeUrlKeys={n1,n2,n3}", "--set", "upstreams.rpc.quorum=2"}, func(t *testing.T, s Set) {
			for _, c := range []string{"supply", "holders"} {
				if _, ok := env(t, s, "t-tokendata-"+c, "SOLANA_RPC_URL"); ok {
					t.Errorf("%s: SOLANA_RPC_URL set beside SOLANA_RPC_URLS", c)
				}
				if e, _ := env(t, s, "t-tokendata-"+c, "SOLANA_RPC_URLS"); e.Value != "$(SOLANA_RPC_NODE_1),$(SOLANA_RPC_NODE_2),$(SOLANA_RPC_NODE_3)" {
					t.Errorf("%s: SOLANA_RPC_URLS %q", c, e.Value)
				}
				if e, ok := env(t, s, "t-tokendata-"+c, "SOLANA_RPC_NODE_2"); !ok || e.ValueFrom.SecretKeyRef.Name != "rpc" || e.ValueFrom.SecretKeyRef.Key != "n2" {
					t.Errorf("%s: node 2 not from the Secret's key n2", c)
				}
			}
			if e, _ := env(t, s, "t-tokendata-supply", "SUPPLY_QUORUM"); e.Value != "2" {
				t.Errorf("SUPPLY_QUORUM %q", e.Value)
			}
		}},
		{"rpc secret, one key holding the node list", []string{"--set", "upstreams.rpc.existingSecret=rpc",
			"--set", "upstreams.rpc.solanaUrlsKey=nodes"}, func(t *testing.T, s Set) {
			if e, ok := env(t, s, "t-tokendata-supply", "SOLANA_RPC_URLS"); !ok || e.ValueFrom.SecretKeyRef.Key != "nodes" {
				t.Error("supply: SOLANA_RPC_URLS not from the Secret's key")
			}
			if _, ok := env(t, s, "t-tokendata-supply", "SOLANA_RPC_URL"); ok {
				t.Error("supply: SOLANA_RPC_URL set beside SOLANA_RPC_URLS")
			}
			if _, ok := env(t, s, "t-tokendata-supply", "SOLANA_WS_URLS"); ok {
				t.Error("supply: SOLANA_WS_URLS set without wsUrlsKey (it is derived from the RPC URLs)")
			}
		}},
		{"rpc secret with the nodes' WebSocket URLs", []string{"--set", "upstreams.rpc.existingSecret=rpc",
			"--set", "upstreams.rpc.solanaUrlsKey=nodes", "--set", "upstreams.rpc.wsUrlsKey=ws-nodes"}, func(t *testing.T, s Set) {
			if e, ok := env(t, s, "t-tokendata-supply", "SOLANA_WS_URLS"); !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "rpc" || e.ValueFrom.SecretKeyRef.Key != "ws-nodes" {
				t.Error("supply: SOLANA_WS_URLS not from the Secret's key")
			}
			for _, c := range []string{"holders", "edge", "market"} {
				if _, ok := env(t, s, "t-tokendata-"+c, "SOLANA_WS_URLS"); ok {
					t.Errorf("%s gets SOLANA_WS_URLS", c)
				}
			}
		}},
		{"signing key", []string{"--set", "signing.existingSecret=sig"}, func(t *testing.T, s Set) {
			e, ok := env(t, s, "t-tokendata-edge", "SIGNING_KEY_FILE")
			if !ok || e.Value != "/etc/tokendata-signing/signing.pem" {
				t.Errorf("edge SIGNING_KEY_FILE %+v", e)
			}
			if _, ok := env(t, s, "t-tokendata-edge", "SIGNING_PREVIOUS_KEY_FILE"); ok {
				t.Error("SIGNING_PREVIOUS_KEY_FILE without a previous key")
			}
			spec := podSpec(t, s, "t-tokendata-edge")
			v, ok := volume(spec, "signing")
			if !ok || v.Secret == nil || v.Secret.SecretName != "sig" || len(v.Secret.Items) != 1 ||
				v.Secret.Items[0].Key != "signing.pem" || v.Secret.Items[0].Path != "signing.pem" {
				t.Fatalf("signing volume %+v, want the Secret sig's key signing.pem as signing.pem", v)
			}
			if m := v.Secret.DefaultMode; m == nil || *m != 0o440 {
				t.Errorf("key file mode %v, want 0440 (the pod's fsGroup reads it)", m)
			}
			mounted := false
			for _, m := range spec.Containers[0].VolumeMounts {
				if m.Name == "signing" {
					mounted = m.ReadOnly && m.MountPath == "/etc/tokendata-signing"
				}
			}
			if !mounted {
				t.Errorf("signing volume not mounted read-only at /etc/tokendata-signing: %+v", spec.Containers[0].VolumeMounts)
			}
			if _, ok := volume(spec, "token"); !ok {
				t.Error("the token file's volume is gone beside the key's")
			}
			if sc := spec.Containers[0].SecurityContext; sc == nil || !isTrue(sc.ReadOnlyRootFilesystem) || !isTrue(sc.RunAsNonRoot) {
				t.Errorf("edge security context %+v, want a read-only root and non-root", sc)
			}
			for _, c := range []string{"supply", "market", "holders", "cache"} {
				if _, ok := volume(podSpec(t, s, "t-tokendata-"+c), "signing"); ok {
					t.Errorf("%s mounts the signing key", c)
				}
				if _, ok := env(t, s, "t-tokendata-"+c, "SIGNING_KEY_FILE"); ok {
					t.Errorf("%s gets SIGNING_KEY_FILE", c)
				}
			}
		}},
		{"signing key, rotation, custom key, no fsGroup", []string{"--set", "signing.existingSecret=sig", "--set", "signing.key=new.pem",
			"--set", "signing.previousKey=old.pem", "--set", "edge.podSecurityContext.fsGroup=null"}, func(t *testing.T, s Set) {
			if e, _ := env(t, s, "t-tokendata-edge", "SIGNING_PREVIOUS_KEY_FILE"); e.Value != "/etc/tokendata-signing/previous.pem" {
				t.Errorf("SIGNING_PREVIOUS_KEY_FILE %q", e.Value)
			}
			v, _ := volume(podSpec(t, s, "t-tokendata-edge"), "signing")
			if v.Secret == nil || len(v.Secret.Items) != 2 || v.Secret.Items[0].Key != "new.pem" || v.Secret.Items[0].Path != "signing.pem" ||
				v.Secret.Items[1].Key != "old.pem" || v.Secret.Items[1].Path != "previous.pem" {
				t.Fatalf("signing volume %+v, want new.pem as signing.pem and old.pem as previous.pem", v)
			}
			if m := v.Secret.DefaultMode; m == nil || *m != 0o444 {
				t.Errorf("key file mode %v without fsGroup, want 0444 (root's files, read by the non-root edge)", m)
			}
		}},
		{"no signing key by default", nil, func(t *testing.T, s Set) {
			if _, ok := env(t, s, "t-tokendata-edge", "SIGNING_KEY_FILE"); ok {
				t.Error("SIGNING_KEY_FILE set without a Secret")
			}
			if _, ok := volume(podSpec(t, s, "t-tokendata-edge"), "signing"); ok {
				t.Error("signing volume without a Secret")
			}
		}},
		{"token mint only", []string{"--set", "token.file=null", "--set", "token.mint=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
			"--set", "token.maxSupply=none"}, func(t *testing.T, s Set) {
			if has(s, "ConfigMap", "t-tokendata-token") {
				t.Error("token ConfigMap rendered")
			}
			if _, ok := env(t, s, "t-tokendata-edge", "TOKEN_CONFIG"); ok {
				t.Error("TOKEN_CONFIG set without a file")
			}
			if e, _ := env(t, s, "t-tokendata-edge", "TOKEN_MINT"); e.Value != "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" {
				t.Errorf("TOKEN_MINT %q", e.Value)
			}
			if e, _ := env(t, s, "t-tokendata-supply", "TOKEN_MAX_SUPPLY"); e.Value != "none" {
				t.Errorf("TOKEN_MAX_SUPPLY %q", e.Value)
			}
		}},
		{"token existing ConfigMap", []string{"--set", "token.existingConfigMap=mine"}, func(t *testing.T, s Set) {
			if has(s, "ConfigMap", "t-tokendata-token") {
				t.Error("token ConfigMap rendered")
			}
			d, _ := s.Get("Deployment", "t-tokendata-edge")
			vols := d.Typed.(*appsv1.Deployment).Spec.Template.Spec.Volumes
			if !slices.ContainsFunc(vols, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == "mine" }) {
				t.Error("the existing ConfigMap is not mounted")
			}
		}},
		{"timings and digest", []string{"--set", "timings.market.refresh=30s", "--set", "edge.image.digest=sha256:" + strings.Repeat("ab", 32)}, func(t *testing.T, s Set) {
			if e, _ := env(t, s, "t-tokendata-market", "MARKET_REFRESH"); e.Value != "30s" {
				t.Errorf("MARKET_REFRESH %q", e.Value)
			}
			d, _ := s.Get("Deployment", "t-tokendata-edge")
			if img := d.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image; !strings.Contains(img, "@sha256:abab") {
				t.Errorf("image %q, want the digest", img)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := render(t, c.args...)
			if err := s.Check(); err != nil {
				t.Errorf("policies:\n%v", err)
			}
			c.check(t, s)
		})
	}
}

// TestRefusals: values that must not render.
func TestRefusals(t *testing.T) {
	cases := map[string][]string{
		"schema: typo in a key":                  {"--set", "edge.replicaCont=2"},
		"schema: unknown holders method":         {"--set", "upstreams.holdersMethod=scan"},
		"schema: credentials in url":             {"--set", "redis.enabled=false", "--set", "externalRedis.url=redis://:pw@r:6379"},
		"no redis at all":                        {"--set", "redis.enabled=false"},
		"no token":                               {"--set", "token.file=null"},
		"gateway without parent":                 {"--set", "gatewayAPI.enabled=true"},
		"schema: bad mint":                       {"--set", "token.mint=not-a-mint"},
		"mint alone without max supply":          {"--set", "token.file=null", "--set", "token.mint=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"},
		"token file without max_supply":          {"--set", "token.file.max_supply=null"},
		"schema: bad max supply":                 {"--set-string", "token.maxSupply=1e9"},
		"schema: no requests":                    {"--set", "edge.resources.requests=null"},
		"signing: previous key without a Secret": {"--set", "signing.previousKey=old.pem"},
		"signing: previous key is the key":       {"--set", "signing.existingSecret=sig", "--set", "signing.previousKey=signing.pem"},
		"schema: signing key empty":              {"--set", "signing.existingSecret=sig", "--set", "signing.key="},
		"schema: signing typo":                   {"--set", "signing.existingSecrets=sig"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := chart.Template(args...); err == nil {
				t.Errorf("helm template %v renders", args)
			} else {
				t.Log(err)
			}
		})
	}
}

// TestRefusalsSay: values that render but the API server would refuse (or
// that would silently do something else) stop the render, and the message
// names the value and what to do. The schema catches some first (its
// message names the key), the templates' checks the rest.
func TestRefusalsSay(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"hpa min above max", []string{"--set", "edge.autoscaling.minReplicas=5", "--set", "edge.autoscaling.maxReplicas=3"},
			"edge.autoscaling: minReplicas (5) is greater than maxReplicas (3)"},
		{"cache hpa min above max", []string{"--set", "cache.autoscaling.enabled=true", "--set", "cache.autoscaling.minReplicas=4", "--set", "cache.autoscaling.maxReplicas=2"},
			"cache.autoscaling: minReplicas (4)"},
		{"commonLabels sets a selector label", []string{"--set", "commonLabels.app\\.kubernetes\\.io/name=other"},
			"commonLabels"},
		{"podLabels sets a selector label", []string{"--set", "edge.podLabels.app\\.kubernetes\\.io/component=x"},
			"podLabels"},
		{"redis podLabels sets the instance", []string{"--set", "redis.podLabels.app\\.kubernetes\\.io/instance=x"},
			"podLabels"},
		{"pdb maxUnavailable 0", []string{"--set", "edge.pdb.maxUnavailable=0"},
			"maxUnavailable"},
		{"pdb maxUnavailable 0%", []string{"--set", "cache.pdb.maxUnavailable=0%"},
			"maxUnavailable"},
		{"cache drain as long as the grace", []string{"--set", "cache.drainDelaySeconds=30"},
			"cache.drainDelaySeconds (30) must be below cache.terminationGracePeriodSeconds (30)"},
		{"second holder source without the RPC Secret", []string{"--set", "upstreams.rpc.holdersCrosscheckUrlKey=holders-second"},
			"upstreams.rpc.holdersCrosscheckUrlKey is set without upstreams.rpc.existingSecret"},
		{"holders PubSub URL without the RPC Secret", []string{"--set", "upstreams.rpc.holdersWsUrlKey=holders-ws"},
			"upstreams.rpc.holdersWsUrlKey is set without upstreams.rpc.existingSecret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chart.Template(tc.args...)
			if err == nil {
				t.Fatalf("helm template %v renders", tc.args)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not say %q:\n%v", tc.want, err)
			}
		})
	}
	// What the checks let through: maxUnavailable 1 and a percentage.
	for _, v := range []string{"1", "25%"} {
		out, err := chart.Template("--set", "edge.pdb.maxUnavailable="+v, "--set", "edge.autoscaling.enabled=false")
		if err != nil {
			t.Fatalf("maxUnavailable %s: %v", v, err)
		}
		objs, err := decoder.DecodeAll(out)
		if err != nil {
			t.Fatal(err)
		}
		pdb, ok := Set(objs).Get("PodDisruptionBudget", "t-tokendata-edge")
		if !ok {
			t.Fatal("no PodDisruptionBudget")
		}
		if got := pdb.Typed.(*policyv1.PodDisruptionBudget).Spec.MaxUnavailable; got == nil || got.String() != v {
			t.Errorf("maxUnavailable %s rendered as %v", v, got)
		}
	}
}

func ingressFromComponent(np *networkingv1.NetworkPolicy, component string) bool {
	for _, r := range np.Spec.Ingress {
		for _, p := range r.From {
			if p.PodSelector != nil && p.PodSelector.MatchLabels["app.kubernetes.io/component"] == component {
				return true
			}
		}
	}
	return false
}

func egressPort(np *networkingv1.NetworkPolicy, port int) bool {
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.IntValue() == port {
				return true
			}
		}
	}
	return false
}

// FuzzDecode: no manifest stream crashes the splitter or the decoder.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	f.Add([]byte("---\n# Source: x\n---\napiVersion: v1\nkind: Service\nspec: {ports: [{port: x}]}\n---\n"))
	f.Add([]byte("a: b\na: c\n"))
	f.Add([]byte("apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nspec: {endpoints: 3}\n"))
	f.Add([]byte("kind: [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range SplitDocuments(b) {
			_, _ = decoder.Decode(d)
		}
	})
}

// TestOverrides: security contexts and probes are the operator's to change
// per component (OpenShift's restricted-v2 assigns the uid itself), and
// nginx's worker count follows the container's CPU, not the node's.
func TestOverrides(t *testing.T) {
	s := render(t,
		"--set", "edge.podSecurityContext.runAsUser=null", "--set", "edge.podSecurityContext.runAsGroup=null",
		"--set", "edge.podSecurityContext.fsGroup=null", "--set", "edge.readinessProbe.periodSeconds=7",
		"--set", "redis.port=6380", "--set", "supply.startupProbe=null")
	d, _ := s.Get("Deployment", "t-tokendata-edge")
	spec := d.Typed.(*appsv1.Deployment).Spec.Template.Spec
	if psc := spec.SecurityContext; psc == nil || psc.RunAsUser != nil || psc.FSGroup != nil || !isTrue(psc.RunAsNonRoot) {
		t.Errorf("edge pod security context %+v, want no fixed ids and runAsNonRoot", psc)
	}
	if p := spec.Containers[0].ReadinessProbe; p == nil || p.PeriodSeconds != 7 || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("edge readiness probe %+v, want /readyz every 7s", p)
	}
	m, _ := s.Get("Deployment", "t-tokendata-market")
	if u := m.Typed.(*appsv1.Deployment).Spec.Template.Spec.SecurityContext.RunAsUser; u == nil || *u != 65532 {
		t.Errorf("market keeps the default uid: %v", u)
	}
	sup, _ := s.Get("Deployment", "t-tokendata-supply")
	if p := sup.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].StartupProbe; p != nil {
		t.Errorf("supply startup probe set to null is rendered: %+v", p)
	}
	r, _ := s.Get("StatefulSet", "t-tokendata-redis")
	if p := r.Typed.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0].ReadinessProbe; p == nil || p.Exec == nil || !slices.Contains(p.Exec.Command, "6380") {
		t.Errorf("redis readiness probe %+v, want redis-cli on the port of redis.port", p)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "worker_processes 1;"},
		{[]string{"--set", "cache.resources.limits.cpu=2500m"}, "worker_processes 3;"},
		{[]string{"--set", "cache.resources.limits.cpu=2"}, "worker_processes 2;"},
		{[]string{"--set", "cache.resources.requests.cpu=1500m"}, "worker_processes 2;"},
		{[]string{"--set", "cache.nginx.workerProcesses=4"}, "worker_processes 4;"},
	} {
		cm, ok := render(t, tc.args...).Get("ConfigMap", "t-tokendata-cache")
		if !ok {
			t.Fatal("no cache ConfigMap")
		}
		if conf := cm.Typed.(*corev1.ConfigMap).Data["nginx.conf"]; !strings.Contains(conf, tc.want) {
			t.Errorf("%v: nginx.conf without %q", tc.args, tc.want)
		}
	}
}

// TestNetworkPolicySwitches: DNS through NodeLocal DNSCache and upstreams
// outside the public-443 default (a self-hosted RPC) are one value each.
func TestNetworkPolicySwitches(t *testing.T) {
	s := render(t, "--set", "networkPolicy.dns.nodeLocal.enabled=true",
		"--set", "networkPolicy.upstream.extraEgress[0].to[0].ipBlock.cidr=10.20.0.15/32",
		"--set", "networkPolicy.upstream.extraEgress[0].ports[0].port=8899")
	for _, c := range []string{"edge", "supply"} {
		np, ok := s.Policy(c)
		if !ok {
			t.Fatalf("no NetworkPolicy of %s", c)
		}
		nodeLocal, rpc := false, false
		for _, r := range np.Spec.Egress {
			for _, p := range r.To {
				if p.IPBlock != nil && p.IPBlock.CIDR == "169.254.20.10/32" && egressPort(&networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{r}}}, 53) {
					nodeLocal = true
				}
				if p.IPBlock != nil && p.IPBlock.CIDR == "10.20.0.15/32" && r.Ports[0].Port.IntValue() == 8899 {
					rpc = true
				}
			}
		}
		if !nodeLocal {
			t.Errorf("%s: no DNS egress to NodeLocal DNSCache", c)
		}
		if rpc != (c == "supply") {
			t.Errorf("%s: egress to the self-hosted RPC %v, want it for collectors only", c, rpc)
		}
	}
}

// podSpec returns the pod template of a Deployment.
func podSpec(t *testing.T, s Set, deployment string) corev1.PodSpec {
	t.Helper()
	d, ok := s.Get("Deployment", deployment)
	if !ok {
		t.Fatalf("no Deployment %s", deployment)
	}
	return d.Typed.(*appsv1.Deployment).Spec.Template.Spec
}

// volume returns the pod's volume named name.
func volume(spec corev1.PodSpec, name string) (corev1.Volume, bool) {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

// testEventsIngress checks the Ingress of /api/events: Exact on every
// host of the main one, to the cache tier, with ingress-nginx's stream
// annotations and the main Ingress's own, but not cert-manager's; the
// same TLS; the main Ingress without the stream annotations.
func testEventsIngress(t *testing.T, s Set) {
	t.Helper()
	main, ok := s.Get("Ingress", "t-tokendata")
	ev, ok2 := s.Get("Ingress", "t-tokendata-events")
	if !ok || !ok2 {
		t.Fatalf("Ingresses: main %v, events %v", ok, ok2)
	}
	m, e := main.Typed.(*networkingv1.Ingress), ev.Typed.(*networkingv1.Ingress)
	for k, want := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-read-timeout":     "3600",
		"nginx.ingress.kubernetes.io/proxy-send-timeout":     "3600",
		"nginx.ingress.kubernetes.io/proxy-buffering":        "off",
		"nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8",
	} {
		if got := e.Annotations[k]; got != want {
			t.Errorf("events Ingress: %s = %q, want %q", k, got, want)
		}
	}
	if _, ok := e.Annotations["cert-manager.io/cluster-issuer"]; ok {
		t.Error("events Ingress carries cert-manager's annotation: two Ingresses would ask for one certificate")
	}
	if _, ok := m.Annotations["nginx.ingress.kubernetes.io/proxy-buffering"]; ok || m.Annotations["cert-manager.io/cluster-issuer"] != "le" {
		t.Errorf("main Ingress annotations %v: want its own only", m.Annotations)
	}
	if *e.Spec.IngressClassName != "nginx" || len(e.Spec.TLS) != 1 || e.Spec.TLS[0].SecretName != "api-tls" {
		t.Errorf("events Ingress class %v, TLS %+v: want the main one's", e.Spec.IngressClassName, e.Spec.TLS)
	}
	if len(e.Spec.Rules) != len(m.Spec.Rules) {
		t.Fatalf("events Ingress has %d rules, the main one %d", len(e.Spec.Rules), len(m.Spec.Rules))
	}
	for i, r := range e.Spec.Rules {
		p := r.HTTP.Paths
		if r.Host != m.Spec.Rules[i].Host || len(p) != 1 || p[0].Path != "/api/events" || *p[0].PathType != networkingv1.PathTypeExact ||
			p[0].Backend.Service.Name != "t-tokendata-cache" || p[0].Backend.Service.Port.Number != 8080 {
			t.Errorf("events Ingress rule %d: %s %+v, want /api/events Exact to the cache tier", i, r.Host, p)
		}
	}
}

// testEventsRoute checks the HTTPRoute's rule of /api/events: first,
// Exact, with the timeouts, to the cache tier; no other rule has any.
func testEventsRoute(t *testing.T, s Set, request, backend string) {
	t.Helper()
	r, ok := s.Get("HTTPRoute", "t-tokendata")
	if !ok {
		t.Fatal("no HTTPRoute")
	}
	rules := r.Typed.(*gatewayv1.HTTPRoute).Spec.Rules
	if len(rules) != 2 {
		t.Fatalf("%d rules, want the events rule and the API's", len(rules))
	}
	ev := rules[0]
	if len(ev.Matches) != 1 || *ev.Matches[0].Path.Type != gatewayv1.PathMatchExact || *ev.Matches[0].Path.Value != "/api/events" {
		t.Errorf("first rule matches %+v, want /api/events Exact", ev.Matches)
	}
	if ev.Timeouts == nil || ev.Timeouts.Request == nil || string(*ev.Timeouts.Request) != request ||
		ev.Timeouts.BackendRequest == nil || string(*ev.Timeouts.BackendRequest) != backend {
		t.Errorf("events rule timeouts %+v, want request %s, backendRequest %s", ev.Timeouts, request, backend)
	}
	if len(ev.BackendRefs) != 1 || ev.BackendRefs[0].Name != "t-tokendata-cache" {
		t.Errorf("events rule backends %+v, want the cache tier", ev.BackendRefs)
	}
	if rules[1].Timeouts != nil {
		t.Errorf("the API's rule has timeouts %+v", rules[1].Timeouts)
	}
}

// testEventsLocation checks the cache tier's location of /api/events:
// unbuffered, uncached, uncompressed, with the read timeout, and the
// stream cap when maxStreams > 0.
func testEventsLocation(t *testing.T, s Set, readTimeout string, maxStreams int) {
	t.Helper()
	cm, ok := s.Get("ConfigMap", "t-tokendata-cache")
	if !ok {
		t.Fatal("no cache ConfigMap")
	}
	conf := cm.Typed.(*corev1.ConfigMap).Data["nginx.conf"]
	loc := regexp.MustCompile(`(?s)location = /api/events \{(.*?)\n        \}`).FindStringSubmatch(conf)
	if loc == nil {
		t.Fatal("no location = /api/events")
	}
	body := loc[1]
	want := []string{"proxy_pass http://edge;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`,
		"proxy_buffering off;", "proxy_cache off;", "gzip off;", `proxy_set_header Accept-Encoding "";`,
		"proxy_read_timeout " + readTimeout + ";", "send_timeout 60s;"}
	if maxStreams > 0 {
		want = append(want, fmt.Sprintf("limit_conn tokendata_events %d;", maxStreams), "limit_conn_status 503;")
	}
	for _, d := range want {
		if !strings.Contains(body, d) {
			t.Errorf("location = /api/events lacks %q:\n%s", d, body)
		}
	}
	for _, d := range []string{"proxy_cache tokendata", "proxy_cache_key"} {
		if strings.Contains(body, d) {
			t.Errorf("location = /api/events has %q", d)
		}
	}
	if maxStreams == 0 && (strings.Contains(conf, "limit_conn") || strings.Contains(conf, "@events_busy")) {
		t.Error("maxStreams 0: the stream cap is still rendered")
	}
}
