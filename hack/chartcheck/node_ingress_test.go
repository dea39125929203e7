package chartcheck

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The operator's path in front of the chart: Traefik, the Ingress
// controller and Gateway API implementation make cluster-up runs
// (hack/cluster/traefik.yaml), routes the release's Ingress and its
// HTTPRoute over HTTPS to the cache tier, with a certificate from the
// test's own CA (cert-manager's programs do not build here:
// docs/decisions.md). The test's clients ask for the public host names
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
	// streamAge: how long the event streams through Traefik are held open
	// before a burn is read from them, past the 60 s read timeout
	// Traefik's entry points keep by default (hack/cluster/traefik.yaml).
	streamAge = 75 * time.Second
)

// ingressValues: the chart installed behind Traefik as its README tells
// an operator to (the router annotations Traefik reads, TLS from a
// Secret, the HTTPRoute attached to the controller's Gateway, and the
// public let in from the controller's namespace alone).
const ingressValues = `ingress:
  enabled: true
  className: traefik
  annotations:
    traefik.ingress.kubernetes.io/router.entrypoints: websecure
    traefik.ingress.kubernetes.io/router.tls: "true"
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

// testPKI is the test's own CA and a certificate it issued for each
// public host name, each in the Secret of its route: a route that
// presented another's (Traefik keeps one store of certificates) fails the
// client's check of the name, and the test's check of which one it was.
type testPKI struct {
	caPEM  []byte
	leaves map[string]testLeaf // by host name
}

type testLeaf struct {
	certPEM, keyPEM []byte
	sha             string // the SHA-256 of the certificate, hex, as netcheck reports it
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tokendata node test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), leaves: map[string]testLeaf{}}
	for i, host := range []string{publicHost, gatewayHost} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(2 + i)), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(der)
		p.leaves[host] = testLeaf{
			certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
			sha:     hex.EncodeToString(sum[:]),
		}
	}
	return p
}

// secret is the kubernetes.io/tls Secret name in ns of host's certificate.
func (p *testPKI) secret(host, name, ns string) string {
	l := p.leaves[host]
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %s, namespace: %s}
type: kubernetes.io/tls
data:
  tls.crt: %s
  tls.key: %s
`, name, ns, base64.StdEncoding.EncodeToString(l.certPEM), base64.StdEncoding.EncodeToString(l.keyPEM))
}

// setupIngress waits for the controller, gives the release's namespace its
// certificate's Secret and makes the controller's Gateway (an HTTPS
// listener for gatewayHost, routes from any namespace), removed at the end.
func setupIngress(t *testing.T, n *Node, pki *testPKI) {
	t.Helper()
	ctx := context.Background()
	if _, err := n.Kubectl(ctx, "-n", traefikNamespace, "rollout", "status", "deployment/traefik", "--timeout=180s"); err != nil {
		t.Fatalf("Traefik not available: %v\n%s", err, podStates(ctx, n))
	}
	t.Cleanup(func() {
		_, _ = n.Kubectl(ctx, "-n", traefikNamespace, "delete", "gateway/"+gatewayName, "secret/"+gatewaySecret, "--ignore-not-found", "--wait=false")
	})
	if err := n.Apply(ctx, pki.secret(publicHost, tlsSecret, nodeNamespace)+"---\n"+pki.secret(gatewayHost, gatewaySecret, traefikNamespace)+fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %s, namespace: %s}
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
`, gatewayName, traefikNamespace, gatewayHost, gatewaySecret)); err != nil {
		t.Fatal(err)
	}
}

// nodeIngress: the release through Traefik over HTTPS, by its Ingress and
// by its HTTPRoute (supply: the simulator's, which the paths row waited
// for through the cache tier), an event stream through the controller
// that outlives its entry point's read timeout and still passes a burn
// on at once, and a controller pod deleted under a client looping
// through it.
func nodeIngress(t *testing.T, n *Node, rep *nodeReport, cl *nodeClient, sim string, pki *testPKI, supply string) {
	ctx := context.Background()
	if supply == "" {
		t.Error("the paths row gave no supply: the rows through Traefik are not run")
		return
	}
	via := traefikVia(pki)
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
			if want := pki.leaves[host].sha; r.Cert != want {
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
		rep.add("every /api/ path over HTTPS through Traefik (Ingress, the test CA's certificate for %s): 200 with the simulator's supply (%s)",
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
func traefikVia(pki *testPKI) []string {
	return []string{"-connect", traefikAddr, "-ca", string(pki.caPEM)}
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
