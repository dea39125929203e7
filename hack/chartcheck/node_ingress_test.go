package chartcheck

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The operator's path in front of the chart: Traefik, the Ingress
// controller and Gateway API implementation make cluster-up runs
// (hack/cluster/traefik.yaml), routes the release's Ingress and its
// HTTPRoute over HTTPS to the cache tier, with the certificates
// cert-manager issues from the annotations the chart README documents
// (on the Ingress; on the Gateway, which is the operator's). The test's clients ask for the public host names
// and connect to Traefik's Service, from a namespace the chart's
// NetworkPolicies refuse: only the controller lets them in.
const (
	traefikNamespace = "traefik"
	traefikAddr      = "traefik.traefik.svc:443"
	publicHost       = "api.tokendata.test" // the Ingress's host
	gatewayHost      = "gw.tokendata.test"  // the HTTPRoute's hostname
	gatewayName      = "public"             // the controller's Gateway, in its namespace
	tlsSecret        = "api-tls"            // the Ingress's certificate, in the release's namespace
	gatewaySecret    = "gateway-tls"        // the Gateway listener's, in the controller's
	// cert-manager, which cluster-up runs (hack/cluster/cert-manager.yaml),
	// and its ClusterIssuer of the local cluster's CA.
	certManagerNamespace = "cert-manager"
	clusterIssuer        = "tokendata-test-ca"
	// streamAge: how long the event streams through Traefik are held open
	// before a burn is read from them, past the 60 s read timeout
	// Traefik's entry points keep by default (hack/cluster/traefik.yaml).
	streamAge = 75 * time.Second
)

// ingressValues: the chart installed behind Traefik as its README tells
// an operator to (the router annotations Traefik reads, TLS in a Secret
// cert-manager issues from the Ingress's annotation, the HTTPRoute attached to the controller's Gateway, and the
// public let in from the controller's namespace alone).
const ingressValues = `ingress:
  enabled: true
  className: traefik
  annotations:
    traefik.ingress.kubernetes.io/router.entrypoints: websecure
    traefik.ingress.kubernetes.io/router.tls: "true"
    cert-manager.io/cluster-issuer: ` + clusterIssuer + `
  hosts:
    - host: ` + publicHost + `
      paths:
        - {path: /api, pathType: Prefix}
        - {path: /, pathType: Exact}
        - {path: /index.html, pathType: Exact}
        - {path: /assets/, pathType: Prefix}
  tls: [{secretName: ` + tlsSecret + `, hosts: [` + publicHost + `]}]
gatewayAPI:
  enabled: true
  parentRefs: [{name: ` + gatewayName + `, namespace: ` + traefikNamespace + `}]
  hostnames: [` + gatewayHost + `]
networkPolicy:
  publicFrom:
    - namespaceSelector:
        matchLabels: {kubernetes.io/metadata.name: ` + traefikNamespace + `}
`

// nodeAPIPaths: every path of the API a GET answers 200 on.
var nodeAPIPaths = []string{"total-supply", "circulating-supply", "max-supply", "supply", "coingecko-supply",
	"price", "holders", "token-metadata", "health", "exchanges", "market", "market-data", "status",
	"market-pairs", "history/price/24h", "openapi.json", "keys"}

// issuedTLS: what cert-manager issued for the public host names, each
// certificate in its route's Secret, and the CA that signed them (the
// ClusterIssuer tokendata-test-ca of hack/cluster/cert-manager.yaml),
// which the test's clients trust alone. A route that presented another's
// certificate (Traefik keeps one store of them) fails the client's check
// of the name, and the test's check of which one it was.
type issuedTLS struct {
	caPEM string
	sha   map[string]string // by host: the certificate's SHA-256, hex, as netcheck reports it
}

// certificatesIssued waits for the Certificates cert-manager's shims make
// from the annotations (the Ingress's, in the release's namespace; the
// Gateway's, in the controller's; each named after its Secret) to be
// Ready, and reads what was issued: each certificate must name its host
// and verify against the CA of the Secret, one CA for both.
func certificatesIssued(t *testing.T, n *Node, rep *nodeReport) *issuedTLS {
	t.Helper()
	ctx := context.Background()
	issued := &issuedTLS{sha: map[string]string{}}
	for _, c := range []struct{ host, ns, name string }{
		{publicHost, nodeNamespace, tlsSecret}, {gatewayHost, traefikNamespace, gatewaySecret},
	} {
		ready := `jsonpath={.metadata.creationTimestamp} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}`
		var fields []string
		if !waitFor(120*time.Second, time.Second, func() bool {
			out, _ := n.Kubectl(ctx, "-n", c.ns, "get", "certificate", c.name, "-o", ready)
			fields = strings.Fields(out)
			return len(fields) == 3 && fields[1] == "True"
		}) {
			out, _ := n.Kubectl(ctx, "-n", c.ns, "get", "certificates,certificaterequests", "-o", "yaml")
			logs, _ := n.Kubectl(ctx, "-n", certManagerNamespace, "logs", "deployment/cert-manager", "--tail=40")
			t.Fatalf("cert-manager issued no certificate %s/%s for %s within 120 s:\n%.4000s\ncert-manager's log:\n%s", c.ns, c.name, c.host, out, logs)
		}
		made, _ := time.Parse(time.RFC3339, fields[0])
		readyAt, _ := time.Parse(time.RFC3339, fields[2])
		pems := map[string][]byte{}
		for _, key := range []string{"tls.crt", "ca.crt"} {
			out, err := n.Kubectl(ctx, "-n", c.ns, "get", "secret", c.name, "-o", "jsonpath={.data."+strings.ReplaceAll(key, ".", `\.`)+"}")
			if err != nil {
				t.Fatal(err)
			}
			if pems[key], err = base64.StdEncoding.DecodeString(strings.TrimSpace(out)); err != nil || len(pems[key]) == 0 {
				t.Fatalf("secret %s/%s: no %s (%v)", c.ns, c.name, key, err)
			}
		}
		leafBlock, _ := pem.Decode(pems["tls.crt"])
		caBlock, _ := pem.Decode(pems["ca.crt"])
		if leafBlock == nil || caBlock == nil {
			t.Fatalf("secret %s/%s: tls.crt or ca.crt is not PEM", c.ns, c.name)
		}
		leaf, err := x509.ParseCertificate(leafBlock.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pems["ca.crt"])
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: c.host, Roots: roots}); err != nil {
			t.Fatalf("the certificate cert-manager issued into %s/%s: %v", c.ns, c.name, err)
		}
		if issued.caPEM != "" && issued.caPEM != string(pems["ca.crt"]) {
			t.Fatalf("the certificates for %s and %s come from different CAs", publicHost, c.host)
		}
		issued.caPEM = string(pems["ca.crt"])
		sum := sha256.Sum256(leafBlock.Bytes)
		issued.sha[c.host] = hex.EncodeToString(sum[:])
		rep.add("cert-manager's certificate for %s (%s/%s, ClusterIssuer %s): Ready %s after its Certificate was made",
			c.host, c.ns, c.name, clusterIssuer, readyAt.Sub(made))
	}
	return issued
}

// setupIngress waits for the controller and cert-manager, and makes the
// controller's Gateway (an HTTPS listener for gatewayHost, routes from
// any namespace) with cert-manager's annotation, removed at the end with
// what cert-manager made for it.
func setupIngress(t *testing.T, n *Node) {
	t.Helper()
	ctx := context.Background()
	for _, d := range []struct{ ns, name string }{{traefikNamespace, "traefik"}, {certManagerNamespace, "cert-manager"}} {
		if _, err := n.Kubectl(ctx, "-n", d.ns, "rollout", "status", "deployment/"+d.name, "--timeout=180s"); err != nil {
			t.Fatalf("%s not available: %v\n%s", d.name, err, podStates(ctx, n))
		}
	}
	t.Cleanup(func() {
		_, _ = n.Kubectl(ctx, "-n", traefikNamespace, "delete", "gateway/"+gatewayName, "certificate/"+gatewaySecret,
			"secret/"+gatewaySecret, "--ignore-not-found", "--wait=false")
	})
	if err := n.Apply(ctx, fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: %s
  namespace: %s
  annotations: {cert-manager.io/cluster-issuer: %s}
spec:
  gatewayClassName: traefik
  listeners:
    - name: websecure
      port: 8443
      protocol: HTTPS
      hostname: %s
      tls:
        mode: Terminate
        certificateRefs: [{kind: Secret, name: %s}]
      allowedRoutes:
        namespaces: {from: All}
`, gatewayName, traefikNamespace, clusterIssuer, gatewayHost, gatewaySecret)); err != nil {
		t.Fatal(err)
	}
}

// nodeIngress: the release through Traefik over HTTPS, by its Ingress and
// by its HTTPRoute (supply: the simulator's, which the paths row waited
// for through the cache tier), an event stream through the controller
// that outlives its entry point's read timeout and still passes a burn
// on at once, and a controller pod deleted under a client looping
// through it.
func nodeIngress(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient, sim string, issued *issuedTLS, supply string) {
	ctx := context.Background()
	if supply == "" {
		t.Error("the paths row gave no supply: the rows through Traefik are not run")
		return
	}
	via := traefikVia(issued)
	// A stream by each route, opened first and read from last, past
	// streamAge.
	hosts := []string{publicHost, gatewayHost}
	streams := map[string]string{}
	for _, h := range hosts {
		streams[h] = cl.with(t).start("events-tls", otherNamespace,
			append(append([]string{"events", "-duration", "10m", "-wait", "3m", "-until", "never-in-a-body"}, via...), "https://"+h+"/api/events")...)
	}
	defer func() {
		for _, pod := range streams {
			_, _ = n.Kubectl(ctx, "-n", otherNamespace, "delete", "pod", pod, "--wait=false")
		}
	}()
	check := func(t *testing.T, host string) {
		c := cl.with(t).through(otherNamespace, via...)
		base := "https://" + host + "/api/"
		var urls []string
		for _, p := range nodeAPIPaths {
			urls = append(urls, base+p)
		}
		// Traefik answers 404 until it has read the route.
		var got map[string]getResult
		if !waitFor(60*time.Second, time.Second, func() bool {
			got = c.get("tls", otherNamespace, base+"health")
			return got[base+"health"].Status == http.StatusOK
		}) {
			t.Fatalf("%shealth through Traefik: %+v", base, got)
		}
		got = c.get("tls", otherNamespace, urls...)
		for _, u := range urls {
			r := got[u]
			if r.Status != http.StatusOK {
				t.Errorf("%s: %d %s%.200s", u, r.Status, r.Error, r.Body)
				continue
			}
			if want := issued.sha[host]; r.Cert != want {
				t.Errorf("%s: the certificate presented (SHA-256 %s) is not the one issued for %s (%s)", u, r.Cert, host, want)
			}
		}
		for _, p := range []string{"total-supply", "circulating-supply"} {
			if b := got[base+p].Body; b != units(supply, 6) {
				t.Errorf("%s%s = %q, want the simulator's supply %q", base, p, b, units(supply, 6))
			}
		}
	}
	t.Run("Ingress over HTTPS through Traefik", func(t *testing.T) {
		start := time.Now()
		check(t, publicHost)
		rep.add("every /api/ path over HTTPS through Traefik (Ingress, cert-manager's certificate for %s): 200 with the simulator's supply (%s)",
			publicHost, time.Since(start).Round(100*time.Millisecond))
	})
	t.Run("HTTPRoute over HTTPS through Traefik", func(t *testing.T) {
		route := nodeRelease + "-tokendata"
		if !waitFor(60*time.Second, time.Second, func() bool {
			out, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", "httproute", route, "-o",
				`jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}`)
			return strings.TrimSpace(out) == "True"
		}) {
			out, _ := n.Kubectl(ctx, "-n", nodeNamespace, "get", "httproute", route, "-o", "yaml")
			t.Fatalf("the HTTPRoute was not accepted by the Gateway %s/%s:\n%s", traefikNamespace, gatewayName, out)
		}
		start := time.Now()
		check(t, gatewayHost)
		rep.add("every /api/ path over HTTPS through Traefik's Gateway %s/%s (HTTPRoute, hostname %s, its own certificate): 200 with the simulator's supply (%s)",
			traefikNamespace, gatewayName, gatewayHost, time.Since(start).Round(100*time.Millisecond))
	})
	t.Run("events through Traefik", func(t *testing.T) {
		c := cl.with(t)
		for _, h := range hosts {
			c.waitLog(streams[h], otherNamespace, `"ready":true`, 90*time.Second)
		}
		opened := time.Now()
		// Held open past the read timeout Traefik gives an entry point by
		// default (60 s), in case it ended a stream.
		time.Sleep(time.Until(opened.Add(streamAge)))
		for _, h := range hosts {
			if logs, _ := n.Kubectl(ctx, "-n", otherNamespace, "logs", streams[h]); strings.Contains(logs, "netcheck:") {
				t.Fatalf("the event stream through Traefik for %s ended within %s:\n%.3000s", h, streamAge, logs)
			}
		}
		start := time.Now()
		supply := burn(t, sim, 3_000_000)
		needle := `"total_supply_raw":"` + supply + `"`
		for _, h := range hosts {
			var at time.Time
			if !waitFor(20*time.Second, 250*time.Millisecond, func() bool {
				logs, _ := n.Kubectl(ctx, "-n", otherNamespace, "logs", streams[h])
				at = eventAt(logs, needle)
				return !at.IsZero()
			}) {
				logs, _ := n.Kubectl(ctx, "-n", otherNamespace, "logs", streams[h])
				t.Fatalf("no supply event of %s through Traefik for %s within 20 s of the burn:\n%.3000s", supply, h, logs)
			}
			took := at.Sub(start)
			rep.add("a burn on the simulator to a supply event read over HTTPS through Traefik for %s, on a stream open for %s: %s",
				h, time.Since(opened).Round(time.Second), took.Round(10*time.Millisecond))
			if took > 2*time.Second {
				t.Errorf("the burn's event came through Traefik for %s %s after it, past 2 s (buffered?)", h, took)
			}
		}
	})
	t.Run("a Traefik pod deleted", func(t *testing.T) {
		c := cl.with(t).through(otherNamespace, via...)
		urls := []string{"https://" + publicHost + "/api/total-supply", "https://" + publicHost + "/api/health",
			"https://" + gatewayHost + "/api/status", "https://" + publicHost + "/api/price"}
		traefikPods := func() []string {
			out, _ := n.Kubectl(ctx, "-n", traefikNamespace, "get", "pods", "-l", "app.kubernetes.io/name=traefik",
				"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
			return strings.Fields(out)
		}
		old := traefikPods()
		if len(old) < 2 {
			t.Fatalf("Traefik runs %d pods, want 2", len(old))
		}
		var deleted time.Time
		var gone time.Duration
		res := c.loopDuring("traefik-deleted", urls, func() {
			deleted = time.Now()
			if _, err := n.Kubectl(ctx, "-n", traefikNamespace, "delete", "pod", "--wait=false", old[0]); err != nil {
				t.Error(err)
				return
			}
			if _, err := n.Kubectl(ctx, "-n", traefikNamespace, "wait", "--for=delete", "pod/"+old[0], "--timeout=90s"); err != nil && !strings.Contains(err.Error(), "NotFound") {
				t.Errorf("the deleted Traefik pod did not end: %v", err)
			} else {
				gone = time.Since(deleted)
			}
			if _, err := n.Kubectl(ctx, "-n", traefikNamespace, "rollout", "status", "deployment/traefik", "--timeout=90s"); err != nil {
				t.Error(err)
			}
		})
		rep.add("requests over HTTPS through Traefik while one of its two pods was deleted (gone %s after): %d sent, %d failed",
			gone.Round(100*time.Millisecond), res.Sent, res.Failed)
		if res.Failed > 0 {
			t.Errorf("%d of %d requests through Traefik failed while one of its pods was deleted: %v", res.Failed, res.Sent, res.Errors)
		}
		if now := traefikPods(); len(now) != 2 || slices.Contains(now, old[0]) {
			t.Errorf("Traefik's pods after the deletion: %v (before %v)", now, old)
		}
	})
}

// traefikVia: netcheck's flags for the public's requests, to Traefik's
// Service, trusting the test's CA alone.
func traefikVia(issued *issuedTLS) []string {
	return []string{"-connect", traefikAddr, "-ca", issued.caPEM}
}

// eventAt is when a netcheck events client read the first event whose
// data holds needle (zero: none yet).
func eventAt(logs, needle string) time.Time {
	for _, line := range strings.Split(logs, "\n") {
		var ev map[string]string
		if json.Unmarshal([]byte(line), &ev) != nil || !strings.Contains(ev["data"], needle) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ev["at"])
		if err == nil {
			return at
		}
	}
	return time.Time{}
}
