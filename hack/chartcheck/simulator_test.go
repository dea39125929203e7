package chartcheck

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// TestSimulatorDemo runs the live demo the way the chart wires it, minus
// Kubernetes: the simulator with the container arguments and environment
// the chart renders (listening on loopback instead of 0.0.0.0), and the
// services with the collectors' rendered upstream variables (the
// simulator's Service name resolved to loopback) and the rendered token
// file. The API then serves the chart's token from the simulator, says
// so (mode demo, every collector and source simulated), and the price
// moves, as the dashboards would show.
func TestSimulatorDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo test waits for the simulated price to move")
	}
	rpcAddr, dexAddr := freeport.Addr(t), freeport.Addr(t)
	rpcPort, dexPort := port(t, rpcAddr), port(t, dexAddr)
	set := render(t, "-f", filepath.Join(chart.Dir, "ci", "simulator-values.yaml"),
		"--set", "simulator.rpcPort="+rpcPort, "--set", "simulator.dexPort="+dexPort,
		"--set", "simulator.priceEvery=1s", "--set", "timings.market.refresh=1s")
	dir := t.TempDir()

	// The token file the chart mounts.
	cm, ok := set.Get("ConfigMap", chart.Release+"-tokendata-token")
	if !ok {
		t.Fatal("no token ConfigMap")
	}
	tokenFile := filepath.Join(dir, "token.yaml")
	if err := os.WriteFile(tokenFile, []byte(cm.Typed.(*corev1.ConfigMap).Data["token.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	container := func(component string) corev1.Container {
		t.Helper()
		o, ok := set.Get("Deployment", chart.Release+"-tokendata-"+component)
		if !ok {
			t.Fatalf("no %s Deployment", component)
		}
		return o.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
	}
	// The rendered environment as plain values (a Secret reference here
	// would be a variable the demo does not have).
	envOf := func(c corev1.Container) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && strings.HasPrefix(e.Name, "REDIS_") {
				continue // Redis is the cluster's; this test runs on the in-memory store
			}
			if e.ValueFrom != nil {
				t.Errorf("%s: %s from %v: the demo needs no Secret", c.Name, e.Name, e.ValueFrom)
				continue
			}
			out[e.Name] = e.Value
		}
		if out["TOKEN_CONFIG"] != "" {
			out["TOKEN_CONFIG"] = tokenFile
		}
		return out
	}

	// The simulator, as rendered.
	sim := container("simulator")
	args := append([]string(nil), sim.Args...)
	host := false
	for i, a := range args {
		if a == "--host=0.0.0.0" {
			args[i], host = "--host=127.0.0.1", true // this machine serves loopback only
		}
	}
	if !host || len(args) == 0 || args[0] != "simulate" {
		t.Fatalf("simulator arguments %q: want simulate --host=0.0.0.0 …", sim.Args)
	}
	bin := buildStandalone(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = withoutEnv(os.Environ(), standaloneEnv...)
	for k, v := range envOf(sim) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	simProc := start(t, cmd)
	waitListening(t, simProc, rpcAddr, dexAddr)

	// The services with the collectors' upstream variables: the same in
	// every collector that has them, each naming the simulator's Service.
	service := chart.Release + "-tokendata-simulator." + chart.Namespace + ".svc"
	env := map[string]string{}
	for _, component := range []string{"supply", "market", "holders", "edge"} {
		for k, v := range envOf(container(component)) {
			switch k {
			case "SOLANA_RPC_URL", "HOLDERS_RPC_URL", "HOLDERS_METHOD", "DEXSCREENER_URL", "GECKOTERMINAL_URL", "UPSTREAMS_SIMULATED",
				"TOKEN_CONFIG", "TOKEN_MINT", "TOKEN_MAX_SUPPLY", "MARKET_REFRESH":
				if prev, ok := env[k]; ok && prev != v {
					t.Errorf("%s: %s=%q, another service has %q", component, k, v, prev)
				}
				env[k] = v
			}
		}
		if e := envOf(container(component)); e["UPSTREAMS_SIMULATED"] != "true" {
			t.Errorf("%s: UPSTREAMS_SIMULATED=%q, want true", component, e["UPSTREAMS_SIMULATED"])
		}
	}
	for _, k := range []string{"SOLANA_RPC_URL", "DEXSCREENER_URL", "GECKOTERMINAL_URL"} {
		u, err := url.Parse(env[k])
		if err != nil || u.Hostname() != service {
			t.Fatalf("%s=%q: want a URL of %s", k, env[k], service)
		}
		u.Host = "127.0.0.1:" + u.Port()
		env[k] = u.String()
	}
	var extra []string
	for k, v := range env {
		extra = append(extra, k+"="+v)
	}
	api := runStandalone(t, bin, "chart demo", extra)

	var status struct {
		Mode   string `json:"mode"`
		Checks struct {
			Collectors map[string]struct {
				Simulated bool `json:"simulated"`
			} `json:"collectors"`
		} `json:"checks"`
	}
	getJSON(t, api.api+"/api/status", &status)
	if status.Mode != "demo" || len(status.Checks.Collectors) != 3 {
		t.Errorf("/api/status: mode %q, %d collectors; want demo and 3", status.Mode, len(status.Checks.Collectors))
	}
	for name, c := range status.Checks.Collectors {
		if !c.Simulated {
			t.Errorf("/api/status: collector %s not marked simulated", name)
		}
	}
	var meta struct {
		Mint string `json:"mint"`
	}
	getJSON(t, api.api+"/api/token-metadata", &meta)
	if want := chartMint(t, tokenFile); meta.Mint != want {
		t.Errorf("/api/token-metadata mint %q, want the chart's token %q", meta.Mint, want)
	}

	// The price moves (priceEvery 1s, market refresh 1s).
	type price struct {
		PriceUSD json.Number `json:"price_usd"`
		Source   struct {
			Simulated bool `json:"simulated"`
		} `json:"source"`
	}
	var first price
	getJSON(t, api.api+"/api/price", &first)
	if first.PriceUSD == "" || !first.Source.Simulated {
		t.Fatalf("/api/price: %+v, want a simulated price", first)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var p price
		getJSON(t, api.api+"/api/price", &p)
		if p.PriceUSD != first.PriceUSD {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/price still %s after 30 s: the demo does not move", first.PriceUSD)
		}
	}
}

// port is the port of a host:port address.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitListening waits until the simulator accepts on both addresses.
func waitListening(t *testing.T, p *process, addrs ...string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second, Transport: noKeepAlive}
	for _, a := range addrs {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if resp, err := c.Get("http://" + a + "/"); err == nil {
				_ = resp.Body.Close()
				break
			}
			select {
			case err := <-p.done:
				t.Fatalf("the simulator exited: %v\n%s", err, p.out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the simulator does not listen on %s within 30 s:\n%s", a, p.out.String())
			}
		}
	}
}

// getJSON decodes the 200 answer of u into v.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: noKeepAlive}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", u, resp.StatusCode, err, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", u, err, b)
	}
}

// chartMint is the mint of a token file.
func chartMint(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "mint:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatalf("no mint in %s", path)
	return ""
}
