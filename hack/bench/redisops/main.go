// Command redisops measures what each process of a release costs its Redis
// (make bench-redis; run it through run.sh, which builds the binaries).
//
// It starts a redis-server on a free loopback port, the project's
// simulator (standalone simulate) as every upstream, the three collectors
// and two edges with their default timings, each process talking to Redis
// through a counting relay of its own that parses the RESP commands it
// sends (names, arguments not kept) and the bytes each way. After a
// warm-up (the first polls, the market backfill), it counts for -d without
// client traffic, then for -d with clients hammering both edges, and
// prints, per process, the commands a second by name, the bytes a second
// each way and its RSS, then Redis's own memory and keys. The edges serve
// from their in-memory snapshot: their Redis commands do not depend on the
// client traffic, which the two windows show.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

func main() {
	bins := flag.String("bins", "", "directory holding the edge, supply, market, holders and standalone binaries")
	window := flag.Duration("d", 120*time.Second, "length of each counting window")
	warmup := flag.Duration("warmup", 30*time.Second, "wait before counting (first polls, backfill)")
	clients := flag.Int("c", 8, "clients per edge in the loaded window")
	var set setFlag
	flag.Var(&set, "set", "VAR=value for every process, repeatable (MARKET_REFRESH=10s to count polls in a short run)")
	flag.Parse()
	if *bins == "" {
		fmt.Fprintln(os.Stderr, "redisops: -bins is required (run hack/bench/redisops/run.sh)")
		os.Exit(2)
	}
	if err := run(*bins, *window, *warmup, *clients, set); err != nil {
		fmt.Fprintln(os.Stderr, "redisops:", err)
		os.Exit(1)
	}
}

// proc is a child process.
type proc struct {
	name string
	cmd  *exec.Cmd
}

type procs struct{ list []*proc }

func (p *procs) start(name, logDir, bin string, env []string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	f, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pr := &proc{name: name, cmd: cmd}
	p.list = append(p.list, pr)
	return pr, nil
}

// stop ends every child with SIGTERM, by its PID, newest first.
func (p *procs) stop() {
	for i := len(p.list) - 1; i >= 0; i-- {
		c := p.list[i].cmd
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
}

func freeAddr() (string, error) {
	p, err := freeport.Take()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// baseEnv is the environment without the variables the run sets.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "TOKEN_"), strings.HasPrefix(k, "REDIS_"), strings.HasPrefix(k, "EDGE_"),
			strings.HasPrefix(k, "MARKET_"), strings.HasPrefix(k, "SUPPLY_"), strings.HasPrefix(k, "HOLDERS_"),
			strings.HasPrefix(k, "METADATA_"), strings.HasSuffix(k, "_URL"), k == "HTTP_ADDR", k == "OPS_ADDR", k == "LOG_LEVEL":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// setFlag collects -set VAR=value.
type setFlag []string

func (s *setFlag) String() string { return strings.Join(*s, " ") }

func (s *setFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q: want VAR=value", v)
	}
	*s = append(*s, v)
	return nil
}

func run(bins string, window, warmup time.Duration, clients int, set []string) error {
	tmp, err := os.MkdirTemp("", "redisops-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var ps procs
	defer ps.stop()

	redisAddr, err := freeAddr()
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(redisAddr)
	if _, err := ps.start("redis", tmp, "redis-server", nil, "--bind", host, "--port", port, "--save", "", "--appendonly", "no", "--dir", tmp); err != nil {
		return err
	}
	if err := waitTCP(redisAddr); err != nil {
		return err
	}

	sim, err := simulate(&ps, tmp, filepath.Join(bins, "standalone"))
	if err != nil {
		return err
	}
	common := append(baseEnv(), "LOG_LEVEL=warn")
	for k, v := range sim {
		common = append(common, k+"="+v)
	}
	common = append(common, set...)

	var relays []*relay
	edges := []string{}
	for _, name := range []string{"supply", "market", "holders", "edge-1", "edge-2"} {
		r, err := newRelay(name, redisAddr)
		if err != nil {
			return err
		}
		relays = append(relays, r)
		ops, err := freeAddr()
		if err != nil {
			return err
		}
		env := append(append([]string(nil), common...), "REDIS_URL=redis://"+r.addr, "OPS_ADDR="+ops)
		bin := name
		if strings.HasPrefix(name, "edge") {
			bin = "edge"
			api, err := freeAddr()
			if err != nil {
				return err
			}
			env = append(env, "HTTP_ADDR="+api)
			edges = append(edges, "http://"+api)
		}
		p, err := ps.start(name, tmp, filepath.Join(bins, bin), env)
		if err != nil {
			return err
		}
		r.pid = p.cmd.Process.Pid
	}
	for _, e := range edges {
		if err := waitHTTP(e + "/api/price"); err != nil {
			return err
		}
	}
	fmt.Printf("redis-server %s, simulator, 3 collectors and 2 edges up; warm-up %s\n", redisAddr, warmup)
	time.Sleep(warmup)

	quiet := measure(relays, window, nil)
	var served atomic.Int64
	loaded := measure(relays, window, func(ctx context.Context) { hammer(ctx, edges, clients, &served) })

	timings := "defaults (MARKET_REFRESH 1m, SUPPLY_REFRESH 5m, HOLDERS_REFRESH 15m, METADATA_REFRESH 1h, EDGE_SNAPSHOT_POLL 2s, COLLECTOR_WATCH_INTERVAL 5s)"
	if len(set) > 0 {
		timings = "defaults but " + strings.Join(set, ", ")
	}
	fmt.Printf("\nRedis commands a second per process, %s, two windows of %s (PUBLISH: one per document written):\n\n", timings, window)
	fmt.Printf("%s\n\n", stamp.Line("make bench-redis"))
	fmt.Println("| process | commands/s, no clients | commands/s, clients on both edges | bytes/s to Redis | bytes/s from Redis | commands, no clients (by name) | RSS |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, r := range relays {
		q, l := quiet[i], loaded[i]
		fmt.Printf("| %s | %.2f | %.2f | %.0f | %.0f | %s | %.1f MiB |\n", r.name, q.rate(q.total()), l.rate(l.total()),
			q.rate(q.up), q.rate(q.down), q.byName(), float64(rss(r.pid))/(1<<20))
	}
	fmt.Printf("\nclients: %d answers from the edges in the loaded window (%.0f/s)\n", served.Load(), float64(served.Load())/window.Seconds())
	return redisFacts(redisAddr)
}

// counts are a relay's counters over a window.
type counts struct {
	seconds  float64
	commands map[string]int64
	up, down int64
}

func (c counts) total() int64 {
	var n int64
	for _, v := range c.commands {
		n += v
	}
	return n
}

func (c counts) rate(n int64) float64 { return float64(n) / c.seconds }

func (c counts) byName() string {
	names := make([]string, 0, len(c.commands))
	for k := range c.commands {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return c.commands[names[i]] > c.commands[names[j]] })
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.commands[k]))
	}
	return strings.Join(parts, ", ")
}

// measure counts each relay's traffic over window, running load meanwhile
// when given.
func measure(relays []*relay, window time.Duration, load func(context.Context)) []counts {
	before := make([]counts, len(relays))
	for i, r := range relays {
		before[i] = r.snapshot()
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	start := time.Now()
	if load != nil {
		load(ctx)
	}
	<-ctx.Done()
	secs := time.Since(start).Seconds()
	out := make([]counts, len(relays))
	for i, r := range relays {
		now := r.snapshot()
		d := counts{seconds: secs, commands: map[string]int64{}, up: now.up - before[i].up, down: now.down - before[i].down}
		for k, v := range now.commands {
			if n := v - before[i].commands[k]; n > 0 {
				d.commands[k] = n
			}
		}
		out[i] = d
	}
	return out
}

// hammer runs clients per edge until ctx is done.
func hammer(ctx context.Context, edges []string, clients int, served *atomic.Int64) {
	paths := []string{"/api/price", "/api/market-data", "/api/total-supply", "/api/supply", "/api/holders"}
	var wg sync.WaitGroup
	for _, e := range edges {
		for i := range clients {
			wg.Go(func() {
				c := &http.Client{Timeout: 5 * time.Second}
				for j := i; ctx.Err() == nil; j++ {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e+paths[j%len(paths)], nil)
					resp, err := c.Do(req)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					served.Add(1)
				}
				c.CloseIdleConnections()
			})
		}
	}
	go func() { <-ctx.Done(); wg.Wait() }()
}

// rss is a process's resident set in bytes (0 when unknown).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// redisFacts prints Redis's memory and its keys with their sizes.
func redisFacts(addr string) error {
	host, port, _ := net.SplitHostPort(addr)
	cli := func(args ...string) (string, error) {
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	info, err := cli("INFO", "memory")
	if err != nil {
		return fmt.Errorf("redis-cli INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && (k == "used_memory_human" || k == "used_memory_dataset") {
			fmt.Printf("redis %s: %s\n", k, v)
		}
	}
	keys, err := cli("--scan")
	if err != nil {
		return err
	}
	list := strings.Fields(keys)
	sort.Strings(list)
	fmt.Printf("redis keys: %d\n", len(list))
	for _, k := range list {
		typ, _ := cli("TYPE", k)
		mem, _ := cli("MEMORY", "USAGE", k)
		fmt.Printf("  %s (%s): %s bytes\n", k, typ, mem)
	}
	return nil
}

func waitTCP(addr string) error {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c.Close()
		}
	}
	return fmt.Errorf("%s does not accept connections", addr)
}

func waitHTTP(u string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, err := c.Get(u); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
	}
	return fmt.Errorf("%s does not answer 200 within 90 s", u)
}

// simulate starts standalone simulate and returns the variables it prints.
func simulate(ps *procs, dir, bin string) (map[string]string, error) {
	cmd := exec.Command(bin, "simulate")
	cmd.Env = baseEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ps.list = append(ps.list, &proc{name: "simulator", cmd: cmd})
	vars := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.ToUpper(k) == k {
			vars[k] = v
		}
		if vars["UPSTREAMS_SIMULATED"] != "" && vars["GECKOTERMINAL_URL"] != "" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return vars, nil
		}
	}
	return nil, errors.New("standalone simulate printed no variables (log in " + dir + ")")
}
