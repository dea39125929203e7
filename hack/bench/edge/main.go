// Command bench measures the edge as deployed against a minimal Gin
// handler, with wrk on loopback (run it through run.sh).
//
// It starts a redis-server on a free port, writes a realistic snapshot of
// the four domains, then runs two servers as child processes of itself:
// the edge with every middleware on (access log at the production
// sampling into /dev/null, metrics, CORS, security headers) reading that
// Redis, and a bare Gin engine answering each path with a constant body of
// the same size. For each path, wrk -c64 -t2 -d<duration> runs against
// both; it prints requests per second, p50, p99, the servers' RSS, and the
// ratios against the targets (throughput ≥ 0.9×, p99 ≤ 1.2×). With
// -signing on (the default), a second edge signs every answer with a key
// generated for the run and runs interleaved with the first:
// the signed row must stay within 5 % of the unsigned one.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof" // BENCH_EDGE_PPROF
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/services/edge"
	"github.com/tokendata/tokendata/services/edge/view"
)

var paths = []string{view.PathTotalSupply, view.PathPrice, view.PathMarketData}

func main() {
	if child(os.Args[1:]) {
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "events" {
		exitOn(eventsMain(os.Args[2:]))
		return
	}
	duration := flag.Duration("d", 5*time.Second, "wrk duration per run")
	conns := flag.Int("c", 64, "wrk connections")
	rounds := flag.Int("rounds", 3, "interleaved rounds per path; medians are reported")
	root := flag.String("root", "../..", "the repository (the chart, services/edge)")
	helm := flag.String("helm", "", "helm binary that renders the chart's nginx config (default: <root>/.bin/helm)")
	boundary := flag.String("boundary", "on", "the boundary row (boundary.go): on, off, or only (that row alone)")
	signing := flag.String("signing", "on", "the signing row: a second edge signing every answer with a generated key, against the unsigned edge (target: within 5 %): on or off")
	flag.Parse()
	if *signing != "on" && *signing != "off" {
		exitOn(fmt.Errorf("-signing %q: want on or off", *signing))
	}
	if *helm == "" {
		*helm = filepath.Join(*root, ".bin", "helm")
	}
	exitOn(orchestrate(*duration, *conns, *rounds, *root, *helm, *boundary, *signing == "on"))
}

// child runs the server a mode names (the processes the bench starts
// from its own binary, or from the test binary in TestMain), and reports
// whether args named one.
func child(args []string) bool {
	if len(args) < 3 {
		return false
	}
	switch args[0] {
	case "serve-edge":
		exitOn(serveEdge(args[1], args[2], false))
	case "serve-edge-signed":
		exitOn(serveEdge(args[1], args[2], true))
	case "serve-minimal":
		exitOn(serveMinimal(args[1], args[2], nil))
	case "serve-minimal-headers":
		exitOn(serveMinimal(args[1], args[2], contractHeaders))
	default:
		return false
	}
	return true
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	rps, p50, p99 float64 // p50/p99 in ms
	// cpu is the server's CPU time per request in µs (its process and
	// its children: nginx's workers), which a loaded machine moves far
	// less than throughput.
	cpu float64
}

var (
	reRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reRequests = regexp.MustCompile(`([0-9]+) requests in`)
	reLat      = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)\s*$`)
)

func wrk(url string, pid int, d time.Duration, conns int) (result, error) {
	before := cpuTicks(pid)
	out, err := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s",
		"--latency", "--timeout", "5s", url).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	var r result
	m := reRPS.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk output without Requests/sec:\n%s", out)
	}
	r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	if n := reRequests.FindSubmatch(out); n != nil {
		if reqs, _ := strconv.ParseFloat(string(n[1]), 64); reqs > 0 {
			r.cpu = float64(cpuTicks(pid)-before) * 1e6 / clockTicks / reqs
		}
	}
	for _, l := range reLat.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(l[2]), 64)
		switch string(l[3]) {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		if string(l[1]) == "50" {
			r.p50 = v
		} else {
			r.p99 = v
		}
	}
	if strings.Contains(string(out), "Non-2xx") {
		return r, fmt.Errorf("wrk saw non-2xx answers:\n%s", out)
	}
	return r, nil
}

func orchestrate(d time.Duration, conns, rounds int, root, helm, boundary string, signing bool) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed (run.sh installs it)")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if nginx, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			return errors.New("nginx is not installed (run.sh installs it through hack/install-chart-deps.sh)")
		}
	}
	dir, err := os.MkdirTemp("", "edge-bench")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// Redis, with a realistic snapshot of the four domains
	redisURL, st, stopRedis, err := startRedis(dir)
	if err != nil {
		return err
	}
	defer stopRedis()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	switch boundary {
	case "only":
		return boundaryRow(self, redisURL, st, d, conns, rounds)
	case "on", "off":
	default:
		return fmt.Errorf("-boundary %q: want on, off or only", boundary)
	}
	edgeAddr, _ := freeAddr()
	edgeCmd := exec.Command(self, "serve-edge", edgeAddr, redisURL)
	edgeCmd.Stderr = os.Stderr
	if err := edgeCmd.Start(); err != nil {
		return err
	}
	defer func() { _ = edgeCmd.Process.Kill(); _ = edgeCmd.Wait() }()
	for _, p := range paths {
		if err := waitHTTP("http://" + edgeAddr + p); err != nil {
			return err
		}
	}
	// The same edge signing every answer, on the same Redis.
	var signedAddr string
	var signedCmd *exec.Cmd
	if signing {
		signedAddr, _ = freeAddr()
		signedCmd = exec.Command(self, "serve-edge-signed", signedAddr, redisURL)
		signedCmd.Stderr = os.Stderr
		if err := signedCmd.Start(); err != nil {
			return err
		}
		defer func() { _ = signedCmd.Process.Kill(); _ = signedCmd.Wait() }()
		for _, p := range paths {
			if err := waitSigned("http://" + signedAddr + p); err != nil {
				return err
			}
		}
	}
	// the minimal handler answers each path with a constant body of the
	// edge's size for that path
	sizes := make([]string, len(paths))
	for i, p := range paths {
		resp, err := http.Get("http://" + edgeAddr + p)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		sizes[i] = strconv.Itoa(len(b))
	}
	minAddr, err := startServer(self, "serve-minimal", strings.Join(sizes, ","))
	if err != nil {
		return err
	}
	defer stopServer(minAddr)
	hdrAddr, err := startServer(self, "serve-minimal-headers", strings.Join(sizes, ","))
	if err != nil {
		return err
	}
	defer stopServer(hdrAddr)

	tierAddr, tierCmd, err := startTier(nginx, helm, filepath.Join(root, "charts", "tokendata"), filepath.Join(dir, "tier"), edgeAddr)
	if err != nil {
		return err
	}
	defer stopNginx(tierCmd)
	tierConf, err := os.ReadFile(filepath.Join(dir, "tier", "nginx.conf"))
	if err != nil {
		return err
	}
	staticAddr, staticCmd, err := startStatic(nginx, filepath.Join(dir, "static"), tierAddr, string(tierConf))
	if err != nil {
		return err
	}
	defer stopNginx(staticCmd)
	allocs, err := serveAllocs(root)
	if err != nil {
		return err
	}

	fmt.Printf("wrk -t2 -c%d -d%s on 127.0.0.1, %d CPUs, %d interleaved rounds per path (medians); edge: every middleware on, access log sampled 1/%d into /dev/null, snapshot from Redis\n",
		conns, d, runtime.NumCPU(), rounds, edge.DefaultConfig().AccessLogSample)
	fmt.Printf("minimal: a Gin handler writing a constant body of the same size; +headers: the same, also sending the headers the contract requires of a data answer\n")
	fmt.Printf("tier: the chart's nginx config (helm template) in front of the edge, every request a cache HIT; static: Debian's nginx serving the same bytes from a file with the same headers, access log and number of workers as the tier\n")
	fmt.Printf("allocs/op: go test -bench 'Serve/identity' ./services/edge (the benchmark's own writer and header map included)\n\n")
	fmt.Printf("cpu: the server's CPU time per request in µs (process and children), steadier than throughput on a loaded machine\n\n")
	fmt.Printf("%-18s %5s | %7s %6s %5s | %7s %6s %5s | %7s %6s %5s | %7s %6s %5s | %7s %6s %5s | %-17s | %-17s | %-17s | %s\n", "path", "bytes",
		"edge", "p99", "cpu", "minimal", "p99", "cpu", "+headers", "p99", "cpu", "tier", "p99", "cpu", "static", "p99", "cpu",
		"edge/min rps p99 cpu", "edge/+hdr", "tier/static", "allocs/op")
	passMin, passHdr, passTier, passSigned := true, true, true, true
	var mdEdge, mdTier, mdSigned strings.Builder
	var signedRows []string
	for i, p := range paths {
		// Interleave the servers, rotating which goes first, so that drift
		// on a shared machine hits them alike; report medians.
		targets := []string{"http://" + edgeAddr + p, "http://" + minAddr + p, "http://" + hdrAddr + p,
			"http://" + tierAddr + p, "http://" + staticAddr + p}
		pids := []int{edgeCmd.Process.Pid, servers[minAddr].Process.Pid, servers[hdrAddr].Process.Pid,
			tierCmd.Process.Pid, staticCmd.Process.Pid}
		if signing {
			targets = append(targets, "http://"+signedAddr+p)
			pids = append(pids, signedCmd.Process.Pid)
		}
		res := make([][]result, len(targets))
		for r := range rounds {
			for k := range targets {
				j := (k + r) % len(targets)
				x, err := wrk(targets[j], pids[j], d, conns)
				if err != nil {
					return err
				}
				res[j] = append(res[j], x)
			}
		}
		e, m, h, t, st := median(res[0]), median(res[1]), median(res[2]), median(res[3]), median(res[4])
		fmt.Printf("%-18s %5s | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %5.2f %5.2f %5.2f | %5.2f %5.2f %5.2f | %5.2f %5.2f %5.2f | %s\n",
			p, sizes[i], e.rps, e.p99, e.cpu, m.rps, m.p99, m.cpu, h.rps, h.p99, h.cpu, t.rps, t.p99, t.cpu, st.rps, st.p99, st.cpu,
			e.rps/m.rps, e.p99/m.p99, e.cpu/m.cpu, e.rps/h.rps, e.p99/h.p99, e.cpu/h.cpu, t.rps/st.rps, t.p99/st.p99, t.cpu/st.cpu, allocs[p])
		fmt.Fprintf(&mdEdge, "| %s | %s / %s / %.0f µs | %s / %s / %.0f µs | %s / %s / %.0f µs | %.2f× / %.2f× / %.2f× | %.2f× / %.2f× / %.2f× | %s |\n", p,
			thousands(e.rps), ms(e.p99), e.cpu, thousands(m.rps), ms(m.p99), m.cpu, thousands(h.rps), ms(h.p99), h.cpu,
			e.rps/m.rps, e.p99/m.p99, e.cpu/m.cpu, e.rps/h.rps, e.p99/h.p99, e.cpu/h.cpu, allocs[p])
		fmt.Fprintf(&mdTier, "| %s | %s / %s / %.0f µs | %s / %s / %.0f µs | %.2f× / %.2f× / %.2f× |\n", p,
			thousands(t.rps), ms(t.p99), t.cpu, thousands(st.rps), ms(st.p99), st.cpu, t.rps/st.rps, t.p99/st.p99, t.cpu/st.cpu)
		passMin = passMin && e.rps/m.rps >= 0.9 && e.p99/m.p99 <= 1.2
		passHdr = passHdr && e.rps/h.rps >= 0.95 && e.p99/h.p99 <= 1.1
		passTier = passTier && t.rps/st.rps >= 0.9 && t.p99/st.p99 <= 1.2
		if signing {
			sg := median(res[5])
			row, md, ok := signedRow(p, e, sg)
			signedRows = append(signedRows, row)
			mdSigned.WriteString(md)
			passSigned = passSigned && ok
		}
	}
	fmt.Println("(ratios: throughput ×, p99 ×; latencies in ms)")
	fmt.Printf("\nRSS after the runs: edge %.1f MB, minimal %.1f MB, +headers %.1f MB\n",
		rssMB(edgeCmd.Process.Pid), rssMB(servers[minAddr].Process.Pid), rssMB(servers[hdrAddr].Process.Pid))
	fmt.Printf("target edge vs +headers (≥ 0.95× throughput, p99 ≤ 1.1×): %s\n", verdict(passHdr))
	fmt.Printf("target tier vs static nginx (≥ 0.9× throughput, p99 ≤ 1.2×): %s\n", verdict(passTier))
	fmt.Printf("edge vs the bare minimal handler (≥ 0.9× throughput, p99 ≤ 1.2×): %s (the difference is the contract's headers: compare +headers)\n", verdict(passMin))
	if signing {
		fmt.Printf("\nsigned: the same edge signing every answer (Content-Digest, Signature-Input, Signature; a key generated for the run), interleaved with the rounds above\n")
		fmt.Printf("%-18s | %7s %6s %5s | %7s %6s %5s | %s\n", "path", "edge", "p99", "cpu", "signed", "p99", "cpu", "signed/edge rps p99 cpu")
		for _, r := range signedRows {
			fmt.Print(r)
		}
		fmt.Printf("target signed vs unsigned edge (within 5 %%: ≥ 0.95× throughput, CPU per request ≤ 1.05×): %s\n", verdict(passSigned))
	}
	fmt.Printf("\ndocs/benchmarks.md tables:\n\n%s\n\n", stamp.Line("make bench"))
	fmt.Printf("| path | edge rps / p99 / CPU | minimal rps / p99 / CPU | +headers rps / p99 / CPU | edge vs minimal | edge vs +headers | edge allocs/op |\n|---|---|---|---|---|---|---|\n%s\n", mdEdge.String())
	fmt.Printf("| path | tier rps / p99 / CPU | static nginx rps / p99 / CPU | tier vs static |\n|---|---|---|---|\n%s", mdTier.String())
	if signing {
		fmt.Printf("\n| path | edge rps / p99 / CPU | signed rps / p99 / CPU | signed vs edge |\n|---|---|---|---|\n%s", mdSigned.String())
	}
	if boundary == "on" {
		return boundaryRow(self, redisURL, st, d, conns, rounds)
	}
	return nil
}

// serveMinimal answers each bench path with a constant body of the given
// size: the ceiling a Gin handler can reach on this machine. With headers,
// it also sends the response headers the contract requires of a data
// answer (constant values of the same length): the ceiling for an answer
// the contract allows.
func serveMinimal(addr, sizes string, headers map[string][]string) error {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	for i, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		body := []byte(strings.Repeat("x", n))
		e.GET(paths[i], func(c *gin.Context) {
			h := c.Writer.Header()
			for k, v := range headers {
				h[k] = v
			}
			c.Data(http.StatusOK, "application/json", body)
		})
	}
	srv := &http.Server{Addr: addr, Handler: e, ReadHeaderTimeout: 5 * time.Second}
	return srv.ListenAndServe()
}

// median takes the median of each figure over the rounds separately.
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		rps: pick(func(r result) float64 { return r.rps }),
		p50: pick(func(r result) float64 { return r.p50 }),
		p99: pick(func(r result) float64 { return r.p99 }),
		cpu: pick(func(r result) float64 { return r.cpu }),
	}
}

// contractHeaders are the headers the contract requires on a data answer
// (CORS, nosniff, Cache-Control, ETag, Last-Modified, X-Data-*), with
// values of the edge's lengths.
var contractHeaders = map[string][]string{
	"Access-Control-Allow-Origin":   {"*"},
	"Access-Control-Expose-Headers": {"ETag, Last-Modified, X-Data-Updated-At, X-Data-Stale, Retry-After, X-Request-Id, Content-Digest, Signature-Input, Signature"},
	"Cache-Control":                 {"public, max-age=15, s-maxage=30, stale-while-revalidate=30, stale-if-error=300"},
	"Etag":                          {`"Xu_lSngba8sMH8HngRgxGQ"`},
	"Last-Modified":                 {"Sat, 21 Nov 2026 13:44:25 GMT"},
	"X-Content-Type-Options":        {"nosniff"},
	"X-Data-Stale":                  {"false"},
	"X-Data-Updated-At":             {"2026-11-21T13:44:25.941Z"},
}

// servers are the minimal servers started by startServer, by address.
var servers = map[string]*exec.Cmd{}

// startServer runs this binary as a minimal server in mode on a free
// port and waits until it answers.
func startServer(self, mode, sizes string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(self, mode, addr, sizes)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	servers[addr] = cmd
	return addr, waitHTTP("http://" + addr + paths[0])
}

func stopServer(addr string) {
	if cmd := servers[addr]; cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
