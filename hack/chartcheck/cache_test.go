package chartcheck

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// TestCacheTier runs the nginx config the chart renders (Debian's nginx)
// in front of a running edge (the standalone binary in demo mode), with a
// counting proxy between the two, and proves: a HIT on the second
// request; the query string out of the key; a client's X-Request-Id
// neither passed to the edge nor served to others; no-store honoured; the
// edge's gzip and brotli variants cached apart, brotli never served to a
// client that did not ask for it; concurrent misses collapsed into one
// edge request; stale-while-revalidate; and stale-if-error while the edge
// is down.
func TestCacheTier(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cache-tier test waits for a cache entry to expire")
	}
	nginx := findNginx(t)
	edge := startStandalone(t)
	counter := startCountingProxy(t, edge.url)
	cache := startNginx(t, nginx, counter.addr)

	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(t *testing.T, path string) reply {
		t.Helper()
		r, err := fetch(c, cache+path)
		if err != nil {
			t.Fatalf("GET %s through nginx: %v", path, err)
		}
		return r
	}
	const price, market = "/api/price", "/api/market"

	first := get(t, price)
	pricedAt := time.Now()
	ok := t.Run("hit on the second request", func(t *testing.T) {
		if first.status != 200 || first.cache != "MISS" {
			t.Fatalf("first GET %s: %d %s, want 200 MISS", price, first.status, first.cache)
		}
		if !strings.Contains(first.header.Get("Cache-Control"), "s-maxage=") {
			t.Fatalf("Cache-Control %q: the edge's header must pass through", first.header.Get("Cache-Control"))
		}
		second := get(t, price)
		if second.cache != "HIT" || second.body != first.body {
			t.Fatalf("second GET: %s (same body: %v), want HIT", second.cache, second.body == first.body)
		}
		if n := counter.count(price); n != 1 {
			t.Fatalf("edge saw %d requests for %s, want 1", n, price)
		}
	})

	ok = ok && t.Run("query string is not in the key", func(t *testing.T) {
		for _, q := range []string{"?x=1", "?x=2", "?cachebust=" + strconv.FormatInt(time.Now().UnixNano(), 10)} {
			if r := get(t, price+q); r.cache != "HIT" || r.body != first.body {
				t.Errorf("GET %s%s: %s, want HIT with the cached body", price, q, r.cache)
			}
		}
		if n := counter.count(price); n != 1 {
			t.Fatalf("edge saw %d requests for %s, want 1", n, price)
		}
	})

	ok = ok && t.Run("a client's X-Request-Id is not forwarded, nor served to others", func(t *testing.T) {
		// The proxy plays an edge that echoes the id it receives on a
		// cacheable answer: nginx must neither pass the client's on nor
		// keep the edge's with the cached answer.
		counter.echo.Store(true)
		defer counter.echo.Store(false)
		const path, attacker = "/api/supply", "attacker-id-42"
		a, err := fetchWith(c, cache+path, http.Header{"X-Request-Id": {attacker}})
		if err != nil || a.status != 200 || a.cache != "MISS" {
			t.Fatalf("client A: %d %s %v, want 200 MISS", a.status, a.cache, err)
		}
		if got := counter.lastID(path); got == "" || got == attacker {
			t.Errorf("the edge received X-Request-Id %q, want nginx's own id", got)
		}
		b, err := fetchWith(c, cache+path, nil)
		if err != nil || b.status != 200 || b.cache != "HIT" {
			t.Fatalf("client B: %d %s %v, want 200 HIT", b.status, b.cache, err)
		}
		// A gets the id nginx gave its request (the one the edge logged);
		// B, served from the cache, an id of its own, nothing of A's.
		if ids := a.header.Values("X-Request-Id"); len(ids) != 1 || ids[0] != counter.lastID(path) {
			t.Errorf("client A got X-Request-Id %q, want only nginx's id of its request, %q", ids, counter.lastID(path))
		}
		if ids := b.header.Values("X-Request-Id"); len(ids) != 1 || ids[0] == attacker || ids[0] == a.header.Get("X-Request-Id") {
			t.Errorf("client B got X-Request-Id %q, want only an id of its own request (A sent %q, got %q)",
				ids, attacker, a.header.Get("X-Request-Id"))
		}
	})

	ok = ok && t.Run("no-store is not cached", func(t *testing.T) {
		for range 2 {
			if r := get(t, "/api/health"); r.status != 200 || r.cache == "HIT" {
				t.Errorf("GET /api/health: %d %s, want 200 and no HIT", r.status, r.cache)
			}
		}
		if n := counter.count("/api/health"); n != 2 {
			t.Errorf("edge saw %d requests for /api/health, want 2", n)
		}
	})

	ok = ok && t.Run("the portal page and its assets are cached like the API", func(t *testing.T) {
		page := get(t, "/")
		if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
			!strings.Contains(page.header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("GET /: %d %q, CSP %q", page.status, page.header.Get("Content-Type"),
				page.header.Get("Content-Security-Policy"))
		}
		if again := get(t, "/"); again.cache != "HIT" || again.body != page.body ||
			again.header.Get("Content-Security-Policy") != page.header.Get("Content-Security-Policy") {
			t.Errorf("second GET /: %s (same body: %v), want HIT with the page's policy", again.cache, again.body == page.body)
		}
		if n := counter.count("/"); n != 1 {
			t.Errorf("edge saw %d requests for /, want 1", n)
		}
		asset := regexp.MustCompile(`/assets/portal-[0-9a-f]+\.css`).FindString(page.body)
		if asset == "" {
			t.Fatal("the page names no stylesheet")
		}
		for i, want := range []string{"MISS", "HIT"} {
			if r := get(t, asset); r.status != 200 || r.cache != want || !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
				t.Errorf("GET %s #%d: %d %s %q, want 200 %s immutable", asset, i+1, r.status, r.cache, r.header.Get("Cache-Control"), want)
			}
		}
	})

	ok = ok && t.Run("content codings: variants cached apart, br only to who asks", func(t *testing.T) {
		testCodings(t, cache, edge.url, counter)
	})

	var collapsedAt time.Time
	var collapsed string
	ok = ok && t.Run("concurrent misses collapse into one edge request", func(t *testing.T) {
		counter.delay.Store(int64(400 * time.Millisecond))
		defer counter.delay.Store(0)
		const n = 16
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			replies = make([]reply, n)
			errs    = make([]error, n)
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				replies[i], errs[i] = fetch(c, cache+market)
			}()
		}
		close(start)
		wg.Wait()
		collapsedAt = time.Now()
		statuses := map[string]int{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("GET %s: %v", market, errs[i])
			}
			if replies[i].status != 200 || replies[i].body != replies[0].body {
				t.Fatalf("GET %s: %d, or bodies differ", market, replies[i].status)
			}
			statuses[replies[i].cache]++
		}
		collapsed = replies[0].body
		if got := counter.count(market); got != 1 {
			t.Fatalf("%d concurrent misses reached the edge %d times, want once (cache statuses %v)", n, got, statuses)
		}
		t.Logf("cache statuses of %d concurrent requests: %v", n, statuses)
	})

	if !ok {
		return
	}
	// Both keys expire after s-maxage; the edge's stale-while-revalidate
	// and stale-if-error windows start there.
	sMaxAge := directive(t, first.header.Get("Cache-Control"), "s-maxage")
	if swr := directive(t, first.header.Get("Cache-Control"), "stale-while-revalidate"); swr < 2 {
		t.Fatalf("stale-while-revalidate=%d: too short to observe", swr)
	}
	if sie := directive(t, first.header.Get("Cache-Control"), "stale-if-error"); sie < 2*sMaxAge+10 {
		t.Fatalf("stale-if-error=%d: too short to observe", sie)
	}
	wait := time.Until(collapsedAt.Add(time.Duration(sMaxAge)*time.Second + 1500*time.Millisecond))
	t.Logf("waiting %s for the entries to expire (s-maxage=%d)", wait.Round(time.Second), sMaxAge)
	time.Sleep(wait)

	ok = t.Run("stale-while-revalidate: stale answer, one background refresh", func(t *testing.T) {
		r := get(t, market)
		if r.cache != "STALE" && r.cache != "UPDATING" {
			t.Fatalf("GET %s after s-maxage: %s, want STALE (served while refreshed)", market, r.cache)
		}
		if r.body != collapsed {
			t.Fatal("the stale answer is not the cached body")
		}
		deadline := time.Now().Add(10 * time.Second)
		for counter.count(market) < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := counter.count(market); n != 2 {
			t.Fatalf("edge saw %d requests for %s, want 2 (one background refresh)", n, market)
		}
		for time.Now().Before(deadline) {
			if r = get(t, market); r.cache == "HIT" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.cache != "HIT" {
			t.Fatalf("after the refresh: %s, want HIT", r.cache)
		}
	})

	_ = ok && t.Run("stale-if-error while the edge is down", func(t *testing.T) {
		if time.Since(pricedAt) < time.Duration(sMaxAge)*time.Second {
			t.Fatal("the price entry has not expired yet")
		}
		edge.kill(t)
		if _, err := fetch(c, edge.url+"/api/health"); err == nil {
			t.Fatal("the edge still answers")
		}
		r := get(t, price)
		if r.status != 200 || r.cache != "STALE" || r.body != first.body {
			t.Fatalf("GET %s with the edge down: %d %s (same body: %v), want 200 STALE with the cached body",
				price, r.status, r.cache, r.body == first.body)
		}
		// A key never cached has nothing stale to serve.
		if r := get(t, "/api/holders"); r.status < 500 {
			t.Fatalf("GET /api/holders (never cached) with the edge down: %d %s, want a 5xx", r.status, r.cache)
		}
	})
	c.CloseIdleConnections()
}

type reply struct {
	status int
	cache  string
	body   string
	header http.Header
}

func fetch(c *http.Client, u string) (reply, error) { return fetchWith(c, u, nil) }

// fetchWith is fetch with request headers.
func fetchWith(c *http.Client, u string, h http.Header) (reply, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return reply{}, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, cache: resp.Header.Get("X-Cache-Status"), body: string(b), header: resp.Header}, err
}

// directive reads a numeric Cache-Control directive.
func directive(t *testing.T, cacheControl, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?:^|[ ,])` + regexp.QuoteMeta(name) + `=([0-9]+)`).FindStringSubmatch(cacheControl)
	if m == nil {
		t.Fatalf("Cache-Control %q has no %s", cacheControl, name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func findNginx(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	t.Fatal("nginx not found: run hack/install-chart-deps.sh (Debian's nginx)")
	return ""
}

// process is a child process with its output kept for failure messages.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
	url  string
}

func (p *process) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.exit() // killed: its exit error says so
}

// exit waits for the process to end and returns its exit error.
func (p *process) exit() error { return <-p.done }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, out: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-p.done:
				if err != nil && t.Failed() {
					t.Logf("%s exited: %v", filepath.Base(cmd.Path), err)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				_ = p.exit()
			}
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(cmd.Path), tail(p.out.String(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// startStandalone builds and starts services/standalone in demo mode (its
// own simulator as every upstream, in-memory store) and waits until it
// serves the data the test reads. env are more variables (NAME=value).
func startStandalone(t *testing.T, env ...string) *process {
	t.Helper()
	bin := buildStandalone(t)
	httpAddr, opsAddr := freeport.Addr(t), freeport.Addr(t)
	cmd := exec.Command(bin)
	cmd.Env = append(withoutEnv(os.Environ(), "TOKEN_CONFIG", "TOKEN_MINT", "TOKEN_MAX_SUPPLY", "REDIS_URL", "HTTP_ADDR", "OPS_ADDR", "DRAIN_DELAY", "LOG_LEVEL", "EDGE_CACHE_CONTROL_MARKET"),
		"HTTP_ADDR="+httpAddr, "OPS_ADDR="+opsAddr, "DRAIN_DELAY=0s", "LOG_LEVEL=warn",
		// Shorter market windows, so the test waits seconds rather than
		// the contract's 30 s for an entry to expire; the test reads the
		// windows from the answers, so it holds for any value.
		"EDGE_CACHE_CONTROL_MARKET=public, max-age=2, s-maxage=4, stale-while-revalidate=10, stale-if-error=300")
	cmd.Env = append(withoutEnv(cmd.Env, "SIGNING_KEY_FILE", "SIGNING_PREVIOUS_KEY_FILE"), env...)
	p := start(t, cmd)
	p.url = "http://" + httpAddr
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(90 * time.Second)
	for _, path := range []string{"/api/health", "/api/price", "/api/market"} {
		for {
			r, err := fetch(c, p.url+path)
			if err == nil && r.status == 200 {
				break
			}
			select {
			case err := <-p.done:
				t.Fatalf("standalone exited: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("standalone (demo mode) does not serve %s with 200 within 90 s: last %d %v", path, r.status, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return p
}

// countingProxy sits between nginx and the edge and counts the requests
// that reach the edge, per path. When the edge is down it drops the
// connection, so nginx sees what it would see without the proxy: an
// upstream that does not answer.
type countingProxy struct {
	addr  string
	delay atomic.Int64
	// echo copies the request's X-Request-Id onto the answer, as an edge
	// that echoes it on cacheable answers would.
	echo   atomic.Bool
	mu     sync.Mutex
	counts map[string]int
	ids    map[string]string // last X-Request-Id received, by path
	// encodings are the Accept-Encoding values received, by path ("" for
	// none).
	encodings map[string]map[string]int
	// sent is when the edge last sent each ETag (W/ removed), by path.
	sent map[string]map[string]time.Time
}

// sentAt returns when the edge last sent the ETag etag (W/ removed) for
// path, and whether it ever did.
func (p *countingProxy) sentAt(path, etag string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.sent[path][strings.TrimPrefix(etag, "W/")]
	return at, ok
}

func (p *countingProxy) encodingsOf(path string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.encodings[path])
}

func (p *countingProxy) lastID(path string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[path]
}

func (p *countingProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[path]
}

func startCountingProxy(t *testing.T, edge string) *countingProxy {
	t.Helper()
	target, err := url.Parse(edge)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{counts: map[string]int{}, ids: map[string]string{}, encodings: map[string]map[string]int{},
		sent: map[string]map[string]time.Time{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	// DisableCompression: pass nginx's Accept-Encoding (or its absence) and
	// the edge's bytes as they are; Go's transport would otherwise ask for
	// gzip itself and decode it.
	rp.Transport = &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	rp.ModifyResponse = func(resp *http.Response) error {
		if id := resp.Request.Header.Get("X-Request-Id"); id != "" && p.echo.Load() {
			resp.Header.Set("X-Request-Id", id)
		}
		if etag := resp.Header.Get("Etag"); etag != "" {
			p.mu.Lock()
			if p.sent[resp.Request.URL.Path] == nil {
				p.sent[resp.Request.URL.Path] = map[string]time.Time{}
			}
			p.sent[resp.Request.URL.Path][strings.TrimPrefix(etag, "W/")] = time.Now()
			p.mu.Unlock()
		}
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.counts[r.URL.Path]++
			p.ids[r.URL.Path] = r.Header.Get("X-Request-Id")
			if p.encodings[r.URL.Path] == nil {
				p.encodings[r.URL.Path] = map[string]int{}
			}
			p.encodings[r.URL.Path][strings.Join(r.Header.Values("Accept-Encoding"), ", ")]++
			p.mu.Unlock()
			time.Sleep(time.Duration(p.delay.Load()))
			rp.ServeHTTP(w, r)
		}),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("counting proxy: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	p.addr = l.Addr().String()
	return p
}

// nginxConfig renders the chart's cache ConfigMap with only the addresses
// and paths changed through values, and returns its nginx.conf.
func nginxConfig(t *testing.T, listen, upstream, dir string, values ...string) string {
	t.Helper()
	lhost, lport, _ := net.SplitHostPort(listen)
	uhost, uport, _ := net.SplitHostPort(upstream)
	args := []string{"--show-only", "templates/cache.yaml",
		"--set", "cache.nginx.listenAddress=" + lhost, "--set", "cache.port=" + lport,
		"--set", "cache.nginx.upstream.host=" + uhost, "--set", "cache.nginx.upstream.port=" + uport,
		"--set", "cache.nginx.cachePath=" + filepath.Join(dir, "cache"), "--set", "cache.nginx.tmpPath=" + filepath.Join(dir, "tmp")}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	out, err := chart.Template(args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decoder.DecodeAll(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if cm, ok := o.Typed.(*corev1.ConfigMap); ok {
			if conf := cm.Data["nginx.conf"]; conf != "" {
				return conf
			}
		}
	}
	t.Fatal("no ConfigMap with nginx.conf in templates/cache.yaml")
	return ""
}

// startNginx runs nginx in the foreground with the chart's config (values
// more chart values, name=value) and returns its base URL.
func startNginx(t *testing.T, nginx, upstream string, values ...string) string {
	t.Helper()
	base, _ := startNginxProcess(t, nginx, upstream, values...)
	return base
}

// startNginxProcess is startNginx, with nginx's process (its master).
func startNginxProcess(t *testing.T, nginx, upstream string, values ...string) (string, *process) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"cache", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		// As root, nginx's workers drop to an unprivileged user (in the pod
		// nginx runs as non-root and keeps its user): open the paths up.
		for _, d := range []string{filepath.Dir(dir), dir, filepath.Join(dir, "cache"), filepath.Join(dir, "tmp")} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	listen := freeport.Addr(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(t, listen, upstream, dir, values...)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nginx, "-t", "-q", "-c", conf, "-e", "stderr", "-p", dir).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	p := start(t, exec.Command(nginx, "-c", conf, "-e", "stderr", "-p", dir))
	base := "http://" + listen
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(15 * time.Second); ; {
		if r, err := fetch(c, base+"/nginx-healthz"); err == nil && r.status == 200 {
			return base, p
		}
		select {
		case err := <-p.done:
			t.Fatalf("nginx exited: %v\n%s", err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx does not answer on %s", listen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
