package chartcheck

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// The CDN trial: the edge's caching headers under a shared cache that is
// not this project's. Debian's Varnish runs with its default VCL (only a
// backend given, the builtin VCL decides everything) in front of a running
// edge, with the counting proxy between the two, under load from keep-alive
// clients. Varnish takes its TTL from s-maxage and its grace from
// stale-while-revalidate; it does not read stale-if-error.

// cdnPath is one path of the load, with the status it must answer.
type cdnPath struct {
	path   string
	status int
	// cached: the answer is cacheable (not no-store).
	cached bool
	// json: a JSON data path, whose answers must say Vary: Accept-Encoding.
	json bool
}

var cdnPaths = []cdnPath{
	{"/api/price", 200, true, true},
	{"/api/market-data", 200, true, true},
	{"/api/supply", 200, true, true},
	{"/api/total-supply", 200, true, false},
	{"/api/exchanges", 200, true, true},
	{"/api/holders", 503, false, true}, // the simulated node cannot enumerate holders
	{"/api/no-such-path", 404, false, false},
	{"/api/health", 200, false, false},
}

// cdnEncodings are the clients' Accept-Encoding field values (nil: none).
var cdnEncodings = [][]string{nil, {"gzip"}, {"br"}, {"gzip, deflate, br, zstd"}, {"identity"}, {"br;q=1, gzip;q=0"}}

// cdnMarketCacheControl is the market group's Cache-Control in the trial:
// the contract's shape with windows of seconds, so that a 20 s run sees
// several expiries and revalidations.
const cdnMarketCacheControl = "public, max-age=2, s-maxage=3, stale-while-revalidate=3, stale-if-error=60"

// lagSlack is what the check of an answer's age against when the edge
// sent it allows beyond the bound: Age counts whole seconds, and an answer
// takes time to reach the client on a loaded machine.
const lagSlack = 2 * time.Second

// cdnLoad is how long the load runs.
const cdnLoad = 20 * time.Second

// cdnTally counts what the clients saw.
type cdnTally struct {
	mu         sync.Mutex
	requests   map[string]int // by path
	encodings  map[string]int // Content-Encoding served ("" for identity)
	violations []string
	maxAge     map[string]int           // largest Age served, by path
	maxLag     map[string]time.Duration // largest time since the edge sent the body served, by path
}

func (c *cdnTally) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// TestCDNVarnish proves the edge's caching headers with Varnish's default
// VCL in front, under load: a hit ratio near 1 with the edge asked at most
// once per variant per s-maxage; no answer older than s-maxage +
// stale-while-revalidate (by its Age, and by when the edge last sent that
// body); no content coding served to a client that did not ask for it;
// 404, 503 and no-store answers never cached (each one reaches the edge);
// If-None-Match answered from the cache; and, with the edge down, stale
// answers only within the same bound, then Varnish's own 503.
func TestCDNVarnish(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CDN trial runs a load for 20 s")
	}
	varnishd := findVarnishd(t)
	bin := buildStandalone(t)
	sim := simulate(t, bin, "--price-every", "1s", "--fault", "getProgramAccounts=rpc_excluded_index")
	env := []string{"EDGE_CACHE_CONTROL_MARKET=" + cdnMarketCacheControl, "MARKET_REFRESH=1s"}
	for k, v := range sim {
		env = append(env, k+"="+v)
	}
	edge := runStandalone(t, bin, "behind varnish", env)
	waitStatus(t, edge.api+"/api/holders", http.StatusServiceUnavailable)
	counter := startCountingProxy(t, edge.api)
	cdn, workDir := startVarnish(t, varnishd, counter.addr)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	bounds := map[string]int{}   // s-maxage + stale-while-revalidate, by path
	sMaxAges := map[string]int{} // s-maxage, by path
	for _, p := range cdnPaths {
		if !p.cached {
			continue
		}
		r := fetchCoded(t, client, http.MethodGet, edge.api+p.path, nil, "")
		cc := r.header.Get("Cache-Control")
		sMaxAges[p.path] = directive(t, cc, "s-maxage")
		bounds[p.path] = sMaxAges[p.path] + directive(t, cc, "stale-while-revalidate")
	}

	tally := &cdnTally{requests: map[string]int{}, encodings: map[string]int{}, maxAge: map[string]int{}, maxLag: map[string]time.Duration{}}
	before := varnishCounters(t, workDir)
	begin := time.Now()
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; time.Since(begin) < cdnLoad; i++ {
				p := cdnPaths[i%len(cdnPaths)]
				ae := cdnEncodings[(i/len(cdnPaths))%len(cdnEncodings)]
				cdnRequest(tally, client, cdn, p, ae, bounds[p.path], counter)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	// Varnish adds a worker's counters to the totals when the worker goes
	// idle: close the connections and give it a moment.
	client.CloseIdleConnections()
	time.Sleep(2 * time.Second)
	after := varnishCounters(t, workDir)
	for _, v := range tally.violations {
		t.Error(v)
	}

	total, cachedClient, cachedEdge := 0, 0, 0
	for _, p := range cdnPaths {
		n, e := tally.requests[p.path], counter.count(p.path)
		total += n
		switch {
		case n == 0:
			t.Errorf("%s: no request in the load", p.path)
		case !p.cached && e != n:
			// An error or a no-store answer is never served from the cache.
			t.Errorf("%s (%d, not cacheable): the edge saw %d of %d requests, want every one", p.path, p.status, e, n)
		case p.cached:
			cachedClient += n
			cachedEdge += e
			// At most two variants (gzip and identity: Varnish asks the
			// edge for gzip only) per expiry of s-maxage, and the first.
			sMaxAge := sMaxAges[p.path]
			if limit := 2 * (int(elapsed/time.Second)/sMaxAge + 2); e > limit {
				t.Errorf("%s: the edge saw %d requests in %s, want at most %d (2 variants per s-maxage=%d)", p.path, e, elapsed.Round(time.Second), limit, sMaxAge)
			}
		}
		t.Logf("%-20s clients %6d  edge %5d  largest Age %2d s  largest lag behind the edge %s", p.path, n, e,
			tally.maxAge[p.path], tally.maxLag[p.path].Round(10*time.Millisecond))
	}
	hit, miss := after["MAIN.cache_hit"]-before["MAIN.cache_hit"], after["MAIN.cache_miss"]-before["MAIN.cache_miss"]
	ratio := 1 - float64(cachedEdge)/float64(cachedClient)
	t.Logf("%d requests in %s (%.0f/s, %d keep-alive clients); codings served %v", total, elapsed.Round(time.Millisecond),
		float64(total)/elapsed.Seconds(), workers, tally.encodings)
	t.Logf("cacheable paths: %d requests, %d reached the edge: hit ratio %.4f; varnishstat: cache_hit %d (grace %d), cache_miss %d, cache_hitmiss %d, backend_req %d",
		cachedClient, cachedEdge, ratio, hit, after["MAIN.cache_hit_grace"]-before["MAIN.cache_hit_grace"], miss,
		after["MAIN.cache_hitmiss"]-before["MAIN.cache_hitmiss"], after["MAIN.backend_req"]-before["MAIN.backend_req"])
	if ratio < 0.95 {
		t.Errorf("hit ratio %.4f on the cacheable paths, want at least 0.95", ratio)
	}
	if tally.encodings["br"] != 0 || tally.encodings["gzip"] == 0 || tally.encodings[""] == 0 {
		t.Errorf("codings served %v: want gzip and identity (Varnish stores gzip and decodes it for the others)", tally.encodings)
	}

	t.Run("If-None-Match answered from the cache", func(t *testing.T) {
		for _, ae := range [][]string{{"gzip"}, nil} {
			r := fetchCoded(t, client, http.MethodGet, cdn+"/api/exchanges", ae, "")
			n := counter.count("/api/exchanges")
			if c := fetchCoded(t, client, http.MethodGet, cdn+"/api/exchanges", ae, r.header.Get("Etag")); c.status != http.StatusNotModified || len(c.body) != 0 {
				t.Errorf("Accept-Encoding %q, If-None-Match %s: %d with %d bytes, want 304", ae, r.header.Get("Etag"), c.status, len(c.body))
			}
			if counter.count("/api/exchanges") != n {
				t.Errorf("Accept-Encoding %q: the conditional request reached the edge", ae)
			}
		}
	})

	t.Run("edge down: stale within the bound, then 503", func(t *testing.T) {
		const path = "/api/price"
		edge.kill(t)
		down := time.Now()
		bound := time.Duration(bounds[path]) * time.Second
		var lastOK time.Time
		for time.Since(down) < bound+5*time.Second {
			r := fetchCoded(t, client, http.MethodGet, cdn+path, []string{"gzip"}, "")
			if r.status == http.StatusOK {
				lastOK = time.Now()
				sent, ok := counter.sentAt(path, r.header.Get("Etag"))
				if age, _ := strconv.Atoi(r.header.Get("Age")); !ok || age > bounds[path] || time.Since(sent) > bound+lagSlack {
					t.Fatalf("with the edge down: 200 with Age %s, sent by the edge %s ago; want at most %s", r.header.Get("Age"), time.Since(sent).Round(time.Millisecond), bound)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("with the edge down: %d, want 200 (stale) or 503", r.status)
			}
			stale := time.Duration(0)
			if !lastOK.IsZero() {
				stale = lastOK.Sub(down)
			}
			t.Logf("edge down: stale 200s for %s, then Varnish's own 503 (Retry-After %q) %s after the edge stopped; stale-if-error is not read by Varnish",
				stale.Round(10*time.Millisecond), r.header.Get("Retry-After"), time.Since(down).Round(10*time.Millisecond))
			return
		}
		t.Fatalf("still 200 %s after the edge stopped (bound %s)", time.Since(down).Round(time.Second), bound)
	})
}

// cdnRequest sends one request of the load and checks its answer.
func cdnRequest(tally *cdnTally, c *http.Client, cdn string, p cdnPath, ae []string, bound int, counter *countingProxy) {
	req, err := http.NewRequest(http.MethodGet, cdn+p.path, nil)
	if err != nil {
		tally.fail("%s: %v", p.path, err)
		return
	}
	if ae != nil {
		req.Header["Accept-Encoding"] = ae
	}
	resp, err := c.Do(req)
	if err != nil {
		tally.fail("GET %s: %v", p.path, err)
		return
	}
	body, err := readAll(resp)
	received := time.Now()
	if err != nil {
		tally.fail("GET %s: %v", p.path, err)
		return
	}
	enc := resp.Header.Get("Content-Encoding")
	tally.mu.Lock()
	tally.requests[p.path]++
	tally.encodings[enc]++
	tally.mu.Unlock()
	if resp.StatusCode != p.status {
		tally.fail("GET %s (Accept-Encoding %q): %d, want %d", p.path, ae, resp.StatusCode, p.status)
		return
	}
	switch {
	case enc == "":
	case enc == "gzip" && acceptsCoding(ae, "gzip"), enc == "br" && acceptsCoding(ae, "br"):
	default:
		tally.fail("GET %s: Content-Encoding %q served to a client that sent Accept-Encoding %q", p.path, enc, ae)
		return
	}
	decoded, err := decode(enc, body)
	if err != nil {
		tally.fail("GET %s: %s body: %v", p.path, enc, err)
		return
	}
	if p.json && !json.Valid(decoded) {
		tally.fail("GET %s: the decoded %q body is not JSON", p.path, enc)
	}
	if p.json && resp.StatusCode == 200 && !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		tally.fail("GET %s: Vary %q, want Accept-Encoding", p.path, resp.Header.Get("Vary"))
	}
	if !p.cached || resp.StatusCode != 200 {
		return
	}
	age, err := strconv.Atoi(resp.Header.Get("Age"))
	if err != nil {
		tally.fail("GET %s: Age %q", p.path, resp.Header.Get("Age"))
		return
	}
	sent, ok := counter.sentAt(p.path, resp.Header.Get("Etag"))
	lag := received.Sub(sent)
	switch {
	case !ok:
		tally.fail("GET %s: ETag %s, which the edge never sent", p.path, resp.Header.Get("Etag"))
	case age > bound:
		tally.fail("GET %s: Age %d, above s-maxage + stale-while-revalidate = %d", p.path, age, bound)
	case lag > time.Duration(bound)*time.Second+lagSlack:
		tally.fail("GET %s: a body the edge last sent %s ago, above s-maxage + stale-while-revalidate = %d s", p.path, lag.Round(time.Millisecond), bound)
	}
	tally.mu.Lock()
	tally.maxAge[p.path] = max(tally.maxAge[p.path], age)
	tally.maxLag[p.path] = max(tally.maxLag[p.path], lag)
	tally.mu.Unlock()
}

// readAll reads and closes an answer's body.
func readAll(resp *http.Response) ([]byte, error) {
	defer func() { _ = resp.Body.Close() }()
	return io.ReadAll(resp.Body)
}

// decode decodes body of Content-Encoding enc ("" for identity).
func decode(enc string, body []byte) ([]byte, error) {
	switch enc {
	case "":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "br":
		return io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
	}
	return nil, fmt.Errorf("unknown Content-Encoding %q", enc)
}

func findVarnishd(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("varnishd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/varnishd"); err == nil {
		return "/usr/sbin/varnishd"
	}
	t.Fatal("varnishd not found: run hack/install-chart-deps.sh (Debian's varnish)")
	return ""
}

// startVarnish runs varnishd in the foreground with its default VCL (only
// the backend given) in front of backend, and returns its base URL and its
// working directory (for varnishstat -n).
func startVarnish(t *testing.T, varnishd, backend string) (string, string) {
	t.Helper()
	workDir := filepath.Join(t.TempDir(), "varnish")
	listen := freeport.Addr(t)
	// -j none: no privilege separation, so that root and non-root runs
	// behave alike; -T none: no management port.
	p := start(t, exec.Command(varnishd, "-F", "-j", "none", "-T", "none", "-n", workDir,
		"-a", listen, "-b", backend, "-s", "malloc,64m"))
	base := "http://" + listen
	c := &http.Client{Timeout: time.Second, Transport: noKeepAlive}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := c.Get(base + "/api/total-supply"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 && resp.Header.Get("Via") != "" {
				return base, workDir
			}
		}
		select {
		case err := <-p.done:
			t.Fatalf("varnishd exited: %v\n%s", err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("varnishd does not answer on %s:\n%s", listen, p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// varnishCounters reads Varnish's counters (varnishstat -1 -j).
func varnishCounters(t *testing.T, workDir string) map[string]int64 {
	t.Helper()
	out, err := exec.Command("varnishstat", "-n", workDir, "-1", "-j").Output()
	if err != nil {
		t.Fatalf("varnishstat: %v", err)
	}
	var stat struct {
		Counters map[string]struct {
			Value int64 `json:"value"`
		} `json:"counters"`
	}
	if err := json.Unmarshal(out, &stat); err != nil {
		t.Fatalf("varnishstat -j: %v", err)
	}
	m := map[string]int64{}
	for k, v := range stat.Counters {
		m[k] = v.Value
	}
	return m
}
