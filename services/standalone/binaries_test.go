package standalone_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator"
	"github.com/tokendata/tokendata/shared/store"
	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// Rows 5 and 6 of the fault matrix run the real service binaries, built
// once per test run from this checkout (workspace mode or GOWORK=off,
// whichever the test runs in), against a real redis-server and the
// simulator: a process is killed or stopped by a signal, as Kubernetes
// does, which no in-process test can show.

var bins struct {
	once sync.Once
	dir  string
	err  error
}

// binaryPackages are the four cluster binaries.
var binaryPackages = []string{
	"github.com/tokendata/tokendata/services/edge/cmd/edge",
	"github.com/tokendata/tokendata/services/supply/cmd/supply",
	"github.com/tokendata/tokendata/services/market/cmd/market",
	"github.com/tokendata/tokendata/services/holders/cmd/holders",
}

// binaries builds the four service binaries once per test run (without
// -race: they are the processes under test, not the test) and returns
// their directory. TestMain removes it.
func binaries(t *testing.T) string {
	t.Helper()
	bins.once.Do(func() {
		dir, err := os.MkdirTemp("", "tokendata-binaries-")
		if err != nil {
			bins.err = err
			return
		}
		bins.dir = dir
		// The standalone module requires (and replaces) every service
		// module, so the build resolves here with and without go.work.
		// Static and trimmed, as the images are built (hack/imagebuild):
		// what runs here is what ships, and its compiled packages are
		// shared with those builds through Go's build cache.
		args := append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", dir + string(os.PathSeparator)}, binaryPackages...)
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.dir
}

// removeBinaries removes what binaries built (TestMain, at the end).
func removeBinaries() {
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
}

// proc is one running service binary.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	// state is set once done is closed.
	state *os.ProcessState
}

// startProc runs the binary name of dir with exactly env (and PATH): no
// variable of the test's own environment leaks into it.
func startProc(t *testing.T, dir, name string, env []string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, name))
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p := &proc{name: name, cmd: cmd, out: &tailBuffer{max: 64 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s (pid %d) output, last lines:\n%s", name, cmd.Process.Pid, p.out.String())
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// wait waits up to d for the process to exit.
func (p *proc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// freeAddr is a loopback address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// tokenEnv names the demo token by its mint alone, as a cluster would.
func tokenEnv(redisURL string) []string {
	return []string{"REDIS_URL=" + redisURL, "TOKEN_MINT=" + config.DemoMint,
		"TOKEN_MAX_SUPPLY=" + config.DemoMaxSupply, "LOG_LEVEL=warn"}
}

// startEdgeBinary runs the edge binary and waits until /readyz answers
// 200; it returns the process, the API base URL and the ops base URL.
func startEdgeBinary(t *testing.T, dir string, env []string) (*proc, string, string) {
	t.Helper()
	api, ops := freeAddr(t), freeAddr(t)
	p := startProc(t, dir, "edge", append(env, "HTTP_ADDR="+api, "OPS_ADDR="+ops, "EDGE_ACCESS_LOG_SAMPLE=0"))
	deadline := time.Now().Add(30 * time.Second)
	for !isReady("http://" + ops) {
		select {
		case <-p.done:
			t.Fatalf("the edge exited at start (%v):\n%s", p.state, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the edge is not ready after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p, "http://" + api, "http://" + ops
}

var probeClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// isReady reports whether /readyz of ops answers 200.
func isReady(ops string) bool {
	resp, err := probeClient.Get(ops + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// violations collects what a check found wrong, keeping the first few.
type violations struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (v *violations) add(format string, a ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.n++
	if len(v.first) < 10 {
		v.first = append(v.first, fmt.Sprintf(format, a...))
	}
}

func (v *violations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

func (v *violations) report(t *testing.T, what string) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n > 0 {
		t.Errorf("%d %s; the first:\n%s", v.n, what, strings.Join(v.first, "\n"))
	}
}

// collectorOf names the collector that writes each domain.
var collectorOf = map[contract.Domain]string{
	contract.DomainSupply: contract.CollectorSupply, contract.DomainMetadata: contract.CollectorSupply,
	contract.DomainMarket: contract.CollectorMarket, contract.DomainHolders: contract.CollectorHolders,
}

// strictJSON decodes b into v refusing unknown fields and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

var decimalRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// checkDocument decodes one raw document value strictly: the envelope,
// then its data as the domain's type, with what each must hold.
func checkDocument(d contract.Domain, raw []byte, now time.Time) (contract.Envelope, error) {
	var env contract.Envelope
	if err := strictJSON(raw, &env); err != nil {
		return env, fmt.Errorf("envelope: %w", err)
	}
	if err := env.ValidateAt(now); err != nil {
		return env, err
	}
	if env.Domain != d || env.Mint != config.DemoMint {
		return env, fmt.Errorf("key of %s holds %s of %s", d, env.Domain, env.Mint)
	}
	if !env.Source.Simulated { // the collectors run with UPSTREAMS_SIMULATED=true
		return env, fmt.Errorf("%s document from the simulator not marked simulated", d)
	}
	switch d {
	case contract.DomainSupply:
		var s contract.Supply
		if err := strictJSON(env.Data, &s); err != nil {
			return env, err
		}
		if s.Decimals != 6 || !decimalRE.MatchString(s.TotalRaw) || s.TotalRaw != s.CirculatingRaw || s.Slot == 0 {
			return env, fmt.Errorf("supply document %+v", s)
		}
	case contract.DomainMetadata:
		var m contract.Metadata
		if err := strictJSON(env.Data, &m); err != nil {
			return env, err
		}
	case contract.DomainMarket:
		var m contract.Market
		if err := strictJSON(env.Data, &m); err != nil {
			return env, err
		}
		if m.Status != contract.MarketOK || m.PriceUSD == nil || !m.PriceUSD.IsPositive() || m.Selected == nil {
			return env, fmt.Errorf("market document without a price (status %q)", m.Status)
		}
	case contract.DomainHolders:
		var h contract.Holders
		if err := strictJSON(env.Data, &h); err != nil {
			return env, err
		}
		if h.Holders == 0 || h.TokenAccounts == 0 {
			return env, fmt.Errorf("holders document %+v", h)
		}
	}
	return env, nil
}

// TestCollectorKilledMidWrite is row 5 of the fault matrix: the three
// collector binaries poll the simulator every second (its price and supply
// moving) and write to a real redis-server; one of them at a time is
// killed with SIGKILL and started again, at least 24 times: half at a
// random moment of its life, half the instant Redis applies one of its
// document writes (a keyspace notification), before the rest of that
// write's steps. Throughout, one reader reads every document and status
// record in one MGET (a consistent cut of Redis) and another reads the
// edge binary. Every value must decode strictly and validate, and every
// document must have its collector's record of the run that wrote it
// (last_success_at not before its updated_at), in Redis and on the edge's
// /api/status; the edge must answer 200 with a whole, valid body every
// time.
func TestCollectorKilledMidWrite(t *testing.T) {
	dir := binaries(t)
	rs := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The price takes a step of at most 2 % every 250 ms: every 1 s poll
	// finds it moved, and the market collector's two aggregators, read
	// one after the other, stay within the cross-check's 2 % unless two
	// steps fall between their reads. At a step every 20 ms, reads 40 ms
	// apart on a loaded machine made the verdict disagree, /api/status
	// degraded, and this test fail on a price it is not about.
	sim, err := simulator.Start(ctx, simulator.Options{Mint: config.DemoMint, Seed: 5, Accounts: 300, Supply: farFromMax,
		PriceEvery: 250 * time.Millisecond, SupplyEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	backend := store.NewRedis(opts)
	defer func() { _ = backend.Close() }()
	rc := backend.Client()
	if err := rc.ConfigSet(ctx, "notify-keyspace-events", "K$").Err(); err != nil {
		t.Fatal(err)
	}

	env := append(tokenEnv(rs.URL()), "SOLANA_RPC_URL="+sim.RPCURL, "DEXSCREENER_URL="+sim.DexScreenerURL,
		"GECKOTERMINAL_URL="+sim.GeckoTerminalURL, "OPS_ADDR=127.0.0.1:0", "DRAIN_DELAY=0s", "UPSTREAMS_SIMULATED=true",
		"SUPPLY_REFRESH=1s", "METADATA_REFRESH=1s", "MARKET_REFRESH=1s", "HOLDERS_REFRESH=1s")
	collectors := []string{contract.CollectorSupply, contract.CollectorMarket, contract.CollectorHolders}
	domainsOf := map[string][]contract.Domain{}
	for d, c := range collectorOf {
		domainsOf[c] = append(domainsOf[c], d)
	}
	running := map[string]*proc{}
	for _, c := range collectors {
		running[c] = startProc(t, dir, c, env)
	}
	docKeys := make([]string, len(contract.Domains))
	for i, d := range contract.Domains {
		docKeys[i] = contract.DocumentKey(config.DemoMint, d)
	}
	statusKeys := make([]string, len(collectors))
	for i, c := range collectors {
		statusKeys[i] = contract.StatusKey(config.DemoMint, c)
	}
	keys := append(append([]string(nil), docKeys...), statusKeys...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := rc.Exists(ctx, keys...).Result()
		if err == nil && int(n) == len(keys) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s Redis holds %d of the %d keys", n, len(keys))
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, api, _ := startEdgeBinary(t, dir, tokenEnv(rs.URL()))

	var stop atomic.Bool
	var wg sync.WaitGroup
	var redisReads, edgeReads atomic.Int64
	var torn, edgeBad violations

	// Reader 1: every key in one MGET, so that a document and its status
	// record are seen at one instant.
	wg.Go(func() {
		for !stop.Load() {
			vals, err := rc.MGet(ctx, keys...).Result()
			if err != nil {
				torn.add("MGET: %v", err)
				continue
			}
			now := time.Now()
			statuses := map[string]contract.Status{}
			for i, c := range collectors {
				s, ok := vals[len(docKeys)+i].(string)
				if !ok {
					torn.add("status record of %s: absent", c)
					continue
				}
				var st contract.Status
				if err := strictJSON([]byte(s), &st); err != nil || st.Collector != c {
					torn.add("status record of %s: %v: %.200q", c, err, s)
					continue
				}
				statuses[c] = st
			}
			for i, d := range contract.Domains {
				s, ok := vals[i].(string)
				if !ok {
					torn.add("%s: absent", d)
					continue
				}
				doc, err := checkDocument(d, []byte(s), now)
				if err != nil {
					torn.add("%s: %v: %.200q", d, err, s)
					continue
				}
				st, ok := statuses[collectorOf[d]]
				if !ok {
					continue
				}
				run, ok := st.Runs[d]
				switch {
				case !ok:
					torn.add("%s updated at %s: the status record of %s has no run of it", d, doc.UpdatedAt, st.Collector)
				case run.LastSuccessAt == nil || run.LastSuccessAt.Before(doc.UpdatedAt):
					torn.add("%s updated at %s: the status record of %s says last success at %v", d, doc.UpdatedAt, st.Collector, run.LastSuccessAt)
				}
			}
			redisReads.Add(1)
			time.Sleep(200 * time.Microsecond)
		}
	})
	// Reader 2: the project's own read path (TTL, size, envelope).
	st := store.New(backend, config.DemoMint)
	wg.Go(func() {
		for !stop.Load() {
			docs, errs, err := st.ReadAll(ctx)
			switch {
			case err != nil:
				torn.add("store read: %v", err)
			case len(errs) > 0:
				torn.add("store read: %v", errs)
			case len(docs) != len(contract.Domains):
				torn.add("store read: %d documents", len(docs))
			}
			redisReads.Add(1)
			time.Sleep(time.Millisecond)
		}
	})
	// Reader 3: the edge binary, over keep-alive connections.
	edgePaths := []string{"/api/total-supply", "/api/supply", "/api/price", "/api/market", "/api/holders",
		"/api/token-metadata", "/api/coingecko-supply", "/api/status"}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for w := range 2 {
		wg.Go(func() {
			for i := w; !stop.Load(); i++ {
				p := edgePaths[i%len(edgePaths)]
				if err := checkEdge(client, api+p); err != nil {
					edgeBad.add("%s: %v", p, err)
				}
				edgeReads.Add(1)
				time.Sleep(time.Millisecond)
			}
		})
	}

	// The killer: each round picks a collector, kills it, starts it again.
	sub := rc.Subscribe(ctx)
	defer func() { _ = sub.Close() }()
	for _, k := range docKeys {
		if err := sub.Subscribe(ctx, "__keyspace@0__:"+k); err != nil {
			t.Fatal(err)
		}
	}
	notes := make(chan string, 64) // the keys written, as Redis applies each write
	go func() {
		for m := range sub.Channel() {
			select {
			case notes <- m.Channel:
			default: // only the next write counts
			}
		}
	}()
	const rounds = 24
	var kills, onWrite int
	rng := rand.New(rand.NewPCG(5, 20))
	for round := range rounds {
		c := collectors[round%len(collectors)]
		p := running[c]
		if round%2 == 0 {
			time.Sleep(time.Duration(rng.IntN(900)) * time.Millisecond)
		} else if waitWrite(notes, domainsOf[c], 5*time.Second) {
			onWrite++
		}
		p.kill()
		if ws, ok := p.state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("%s was not killed by SIGKILL: %v", c, p.state)
		}
		kills++
		running[c] = startProc(t, dir, c, env)
	}
	// Let the restarted collectors write once more, then stop reading.
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	torn.report(t, "torn, partial or inconsistent reads of Redis")
	edgeBad.report(t, "bad answers of the edge")
	if onWrite < rounds/4 {
		t.Errorf("only %d of the kills landed on a document write", onWrite)
	}
	t.Logf("%d SIGKILLs (%d the instant a document was written), %d reads of Redis, %d answers of the edge",
		kills, onWrite, redisReads.Load(), edgeReads.Load())
	// The fault's name is the table's key (checkOperationsDoc): what was
	// measured goes in the other cells, never in it.
	recordRow(t, matrixRow{Order: 5, Fault: fmt.Sprintf("a collector killed with SIGKILL mid-write (%d kills, every other one aimed at the instant Redis applies a document write)", rounds),
		During: fmt.Sprintf("every read whole and valid: %d reads of Redis, %d answers of the edge, all 200; %d of the %d aimed kills landed the instant Redis applied a write",
			redisReads.Load(), edgeReads.Load(), onWrite, rounds/2),
		Status:       "ok throughout; each document's collector record names the run that wrote it",
		RecoveryNote: "nothing to recover: 0 torn or partial reads; a restarted collector takes over its record"})
}

// waitWrite waits up to d for Redis to apply a write of one of domains'
// keys; it drops notifications of other keys.
func waitWrite(notes <-chan string, domains []contract.Domain, d time.Duration) bool {
	// Drain what came before: the kill is for the next write.
	for {
		select {
		case <-notes:
			continue
		default:
		}
		break
	}
	timeout := time.After(d)
	for {
		select {
		case m := <-notes:
			for _, dm := range domains {
				if strings.HasSuffix(m, ":"+string(dm)) {
					return true
				}
			}
		case <-timeout:
			return false
		}
	}
}

// checkEdge reads one path of the edge: 200, the whole body (as long as
// Content-Length says, or as the gzip trailer says), and a body of the
// path's form.
func checkEdge(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	// Go's client asks for gzip and decompresses it itself, dropping the
	// length; then the gzip trailer (CRC-32 and size, checked by ReadAll
	// above) proves the body whole instead.
	if !resp.Uncompressed && resp.ContentLength != int64(len(body)) {
		return fmt.Errorf("%d bytes of %d", len(body), resp.ContentLength)
	}
	return checkBody(url, resp.Header, body)
}

// checkBody checks a 200 body of the edge: a decimal for the plain-text
// paths, a JSON object with updated_at for the others; /api/status must
// say ok and name, for each domain, a run of its collector that succeeded
// no earlier than the document's updated_at.
func checkBody(url string, h http.Header, body []byte) error {
	if strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		if !decimalRE.Match(body) {
			return fmt.Errorf("not a decimal: %.100q", body)
		}
		return nil
	}
	if !strings.HasSuffix(url, "/api/status") {
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		if _, ok := v["updated_at"]; !ok {
			return fmt.Errorf("no updated_at: %.200s", body)
		}
		return nil
	}
	var s struct {
		Status   string   `json:"status"`
		Problems []string `json:"problems"`
		Checks   struct {
			Domains map[string]struct {
				UpdatedAt *time.Time `json:"updated_at"`
			} `json:"domains"`
			Collectors map[string]struct {
				Runs map[string]struct {
					OK            bool       `json:"ok"`
					LastSuccessAt *time.Time `json:"last_success_at"`
				} `json:"runs"`
			} `json:"collectors"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return err
	}
	if s.Status != "ok" {
		return fmt.Errorf("status %s: %v", s.Status, s.Problems)
	}
	for d, c := range collectorOf {
		dc := s.Checks.Domains[string(d)]
		run, ok := s.Checks.Collectors[c].Runs[string(d)]
		switch {
		case dc.UpdatedAt == nil:
			return fmt.Errorf("%s: no updated_at", d)
		case !ok:
			return fmt.Errorf("%s updated at %s: collector %s shows no run of it", d, dc.UpdatedAt, c)
		case !run.OK || run.LastSuccessAt == nil || run.LastSuccessAt.Before(*dc.UpdatedAt):
			return fmt.Errorf("%s updated at %s: collector %s shows ok %v, last success at %v", d, dc.UpdatedAt, c, run.OK, run.LastSuccessAt)
		}
	}
	return nil
}

// TestEdgeSIGTERMUnderLoad is row 6 of the fault matrix: the edge binary
// (DRAIN_DELAY 1 s) serves eight keep-alive clients in a tight loop when
// it gets SIGTERM. Four are Go http.Clients that stop sending 100 ms after
// /readyz turns false, as a load balancer takes a replica out. Four are
// raw HTTP/1.1 clients that never retry and behave like a proxy's
// keep-alive pool behind an L4 balancer: they open no connection after
// that moment, but keep sending on the ones they have until the server
// closes them. Every request sent must get its whole 200 answer, and no
// client may see a reset or a connection closed under a request; the edge
// must exit 0 after the drain.
func TestEdgeSIGTERMUnderLoad(t *testing.T) {
	dir := binaries(t)
	rs := redistest.Start(t)
	opts, err := store.ParseRedisURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.NewRedis(opts), config.DemoMint)
	defer func() { _ = st.Close() }()
	if err := edgetest.WriteAll(context.Background(), st, time.Now()); err != nil {
		t.Fatal(err)
	}
	const drain = time.Second
	p, api, ops := startEdgeBinary(t, dir, append(tokenEnv(rs.URL()), "DRAIN_DELAY="+drain.String(), "SHUTDOWN_TIMEOUT=10s"))
	addr := strings.TrimPrefix(api, "http://")

	loadPaths := []string{"/api/total-supply", "/api/supply", "/api/price", "/api/market-data",
		"/api/holders", "/api/coingecko-supply", "/api/token-metadata", "/api/market-pairs"}
	var served, closedByServer atomic.Int64
	var errs violations
	// cutoff is when the balancer stops sending: 100 ms after /readyz
	// turns false.
	var cutoffAt atomic.Int64
	pastCutoff := func() bool { c := cutoffAt.Load(); return c != 0 && time.Now().UnixNano() >= c }
	var notReadyAt atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // the balancer's readiness probe
		for {
			if !isReady(ops) {
				now := time.Now()
				notReadyAt.Store(now.UnixNano())
				cutoffAt.Store(now.Add(100 * time.Millisecond).UnixNano())
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	transport := &http.Transport{MaxIdleConnsPerHost: 4}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	for w := range 4 {
		wg.Go(func() {
			for i := w; !pastCutoff(); i++ {
				if err := checkEdge(client, api+loadPaths[i%len(loadPaths)]); err != nil {
					errs.add("Go client: %v", err)
					return
				}
				served.Add(1)
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			rawClient(addr, loadPaths, w, pastCutoff, &served, &closedByServer, &errs)
		})
	}

	time.Sleep(700 * time.Millisecond)
	before := served.Load()
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !p.wait(drain + 10*time.Second) {
		t.Fatalf("the edge did not exit within %s of SIGTERM", drain+10*time.Second)
	}
	drained := time.Since(signalled)
	wg.Wait()

	if !p.state.Success() {
		t.Errorf("the edge exited with %v", p.state)
	}
	errs.report(t, "failed requests")
	if before < 100 {
		t.Errorf("only %d requests before SIGTERM: no load to speak of", before)
	}
	notReady := time.Duration(notReadyAt.Load() - signalled.UnixNano())
	if notReadyAt.Load() == 0 || notReady > time.Second {
		t.Errorf("/readyz turned false %s after SIGTERM", notReady)
	}
	if drained < drain || drained > drain+5*time.Second {
		t.Errorf("the edge exited %s after SIGTERM (DRAIN_DELAY %s)", drained, drain)
	}
	t.Logf("%d requests served (%d during the drain), %d keep-alive connections closed by the server after an answer, %d errors; not ready %s after SIGTERM, exited after %s",
		served.Load(), served.Load()-before, closedByServer.Load(), errs.count(), notReady.Round(time.Millisecond), drained.Round(time.Millisecond))
	recordRow(t, matrixRow{Order: 6, Fault: "an edge stopped with SIGTERM under load (8 keep-alive clients, 4 of them raw HTTP/1.1 that never retry)",
		During:       fmt.Sprintf("%d requests, 0 errors: every request in flight gets its whole 200 answer; answers during the drain carry `Connection: close`, no connection is reset", served.Load()),
		Status:       "`/readyz` 503 from the signal on; `/api/status` unchanged",
		RecoveryNote: fmt.Sprintf("exits 0 after the drain: %s with `DRAIN_DELAY` %s (≤ %s)", roundDuration(drained), drain, drain+5*time.Second)})
}

// rawClient sends GETs back to back on one HTTP/1.1 connection at a time,
// without ever retrying: any request written that does not get its whole
// answer is an error. Past the cutoff it opens no connection but keeps
// using the one it has until the server closes it after an answer
// (Connection: close).
func rawClient(addr string, paths []string, w int, pastCutoff func() bool, served, closed *atomic.Int64, errs *violations) {
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for i := w; ; i++ {
		if conn == nil {
			if pastCutoff() {
				return
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs.add("raw client: dial: %v", err)
				return
			}
			conn, br = c, bufio.NewReader(c)
		}
		path := paths[i%len(paths)]
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: raw-client\r\n\r\n", path, addr); err != nil {
			errs.add("raw client: write %s: %v", path, err)
			return
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			errs.add("raw client: %s: no answer: %v", path, err)
			return
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		switch {
		case err != nil:
			errs.add("raw client: %s: body: %v", path, err)
			return
		case resp.StatusCode != http.StatusOK:
			errs.add("raw client: %s: status %d", path, resp.StatusCode)
			return
		case resp.ContentLength != int64(len(body)):
			errs.add("raw client: %s: %d bytes of %d", path, len(body), resp.ContentLength)
			return
		}
		if err := checkBody(path, resp.Header, body); err != nil {
			errs.add("raw client: %s: %v", path, err)
			return
		}
		served.Add(1)
		if resp.Close {
			closed.Add(1)
			_ = conn.Close()
			conn = nil
		}
	}
}

// farFromMax is the starting supply of the simulations that mint every few
// milliseconds: half the demo token's maximum. From the simulator's default
// (987,654,321, 1.25 % below it) a mint of 0.001 % every 20 ms crosses the
// maximum after about 25 s, and from then on /api/status is degraded
// (total_above_max), which fails TestCollectorKilledMidWrite on a loaded
// machine, where it takes 50 s instead of 20. From here it takes over 20
// minutes.
const farFromMax = 500_000_000_000_000
