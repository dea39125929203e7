package main

// make bench-events: 10,000 subscribers of /api/events on one
// edge. The edge runs as make bench runs it (a child process of this
// binary, every middleware on, a real redis-server on a free loopback
// port), with EDGE_MAX_CONNECTIONS and EDGE_MAX_EVENT_STREAMS raised.
// It measures:
//
//   - the edge's RSS before the subscribers and with them, and the Go
//     runtime's own account of it (goroutines, stacks, heap) per stream;
//   - fan-out: a new market document (a new price) is written to Redis,
//     and each subscriber records when it parsed the `price` event that
//     carries the new price; latency = receive - write, over every
//     subscriber and change, and per change the last subscriber;
//   - the edge's CPU (utime + stime) per event delivered during the
//     changes;
//   - make bench's edge row (wrk, same settings) on that edge while the
//     subscribers stay connected, interleaved with the same edge build
//     without subscribers (a second process), medians of the rounds.
//
// The targets are printed met or NOT met; a miss does not fail the run.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/contract"
)

// eventsOptions are the run's settings (flags of `edge-bench events`).
type eventsOptions struct {
	subscribers, changes      int
	maxConns, maxStreams      int
	wrkDuration               time.Duration
	wrkConns, rounds          int
	heapProfile, cpuProfile   string
	connectTimeout, waitEvent time.Duration
}

// The targets a run is judged by: the edge's resident memory with every
// subscriber connected, one change reaching all of them (p99), and the
// API's throughput and p99 with the subscribers against without them.
const (
	targetRSSMiB    = 256
	targetP99ms     = 250
	targetEdgeRatio = 0.05
)

func eventsMain(args []string) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	var o eventsOptions
	fs.IntVar(&o.subscribers, "n", 10000, "concurrent subscribers of /api/events")
	fs.IntVar(&o.changes, "changes", 20, "price changes written to Redis, one after the other")
	fs.IntVar(&o.maxConns, "max-connections", 12000, "EDGE_MAX_CONNECTIONS of the edge")
	fs.IntVar(&o.maxStreams, "max-streams", 10500, "EDGE_MAX_EVENT_STREAMS of the edge")
	fs.DurationVar(&o.wrkDuration, "d", 5*time.Second, "wrk duration per run of the edge row (make bench's)")
	fs.IntVar(&o.wrkConns, "c", 64, "wrk connections (make bench's)")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds of the edge row, with and without subscribers (medians); 0: no edge row")
	fs.StringVar(&o.heapProfile, "heap-profile", "", "write the edge's heap profile with the subscribers connected to this file, and after the changes to FILE.after")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write the edge's CPU profile over the changes to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.connectTimeout, o.waitEvent = 60*time.Second, 10*time.Second
	_, err := runEvents(o, os.Stdout)
	return err
}

// eventsReport is what a run measured (the test reads it).
type eventsReport struct {
	rssBefore, rssWith, rssAfter float64 // MiB
	lat, first, last             []float64
	missed                       int
	delivered, cpuPerEvent       float64
	// cpu and clientCPU are the edge's and the subscribers' (this
	// process's) CPU seconds over the changes.
	cpu, clientCPU float64
	ended          int64
	// fanoutFirst is what the edge's event_fanout_seconds counted while
	// the subscribers connected (their first events are not fan-out: 0);
	// fanoutChanges over the changes (each event delivered).
	fanoutFirst, fanoutChanges float64
	rows                       []edgeRow
}

// edgeRow is one path of the edge row, with and without subscribers.
type edgeRow struct {
	path          string
	with, without result
}

// raiseNoFile raises RLIMIT_NOFILE's soft limit to the hard one (Go does
// it at start; this says so, and checks there is room for need).
func raiseNoFile(need int) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	if l.Cur < uint64(need) {
		return l.Cur, fmt.Errorf("RLIMIT_NOFILE is %d (hard limit %d): %d subscribers need %d descriptors; raise the hard limit (ulimit -Hn)", l.Cur, l.Max, need-1000, need)
	}
	return l.Cur, nil
}

// eventsEdge is one edge process of the run.
type eventsEdge struct {
	addr, ops string
	cmd       *exec.Cmd
}

func (e *eventsEdge) pid() int { return e.cmd.Process.Pid }

func (e *eventsEdge) stop() { _ = e.cmd.Process.Kill(); _ = e.cmd.Wait() }

// startEventsEdge runs the edge as make bench does, with the caps raised
// and its /metrics and /debug/pprof/ on a loopback port of their own.
func startEventsEdge(self, redisURL string, o eventsOptions) (*eventsEdge, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	ops, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "serve-edge", addr, redisURL)
	cmd.Env = append(os.Environ(), "EDGE_MAX_CONNECTIONS="+strconv.Itoa(o.maxConns),
		"EDGE_MAX_EVENT_STREAMS="+strconv.Itoa(o.maxStreams), "BENCH_EDGE_PPROF="+ops)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &eventsEdge{addr: addr, ops: ops, cmd: cmd}
	if err := waitHTTP("http://" + addr + paths[1]); err != nil {
		e.stop()
		return nil, err
	}
	if err := waitHTTP("http://" + ops + "/metrics"); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// scrape reads the named series (without labels) of the edge's /metrics.
func scrape(ops string, names ...string) (map[string]float64, error) {
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if ok && slices.Contains(names, name) {
			out[name], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics of the edge has no %s", n)
		}
	}
	return out, sc.Err()
}

const (
	mGoroutines = "go_goroutines"
	mStacks     = "go_memstats_stack_inuse_bytes"
	mHeap       = "go_memstats_heap_inuse_bytes"
	mOpen       = "tokendata_edge_event_streams_open"
	mDelivered  = "tokendata_edge_events_delivered_total"
	mFanout     = "tokendata_edge_event_fanout_seconds_count"
)

var runtimeSeries = []string{mGoroutines, mStacks, mHeap, mOpen, mDelivered, mFanout}

// changePrice is the price of change k: a new value each time, near the
// fixtures' (0.00001234).
func changePrice(k int) decimal.Decimal { return decimal.New(int64(1235+k), -8) }

func runEvents(o eventsOptions, w io.Writer) (*eventsReport, error) {
	if err := requireTools(o.rounds); err != nil {
		return nil, err
	}
	limit, err := raiseNoFile(o.subscribers + 1000)
	if err != nil {
		return nil, err
	}
	if o.subscribers >= o.maxStreams || o.maxStreams >= o.maxConns {
		return nil, fmt.Errorf("want subscribers (%d) < EDGE_MAX_EVENT_STREAMS (%d) < EDGE_MAX_CONNECTIONS (%d)", o.subscribers, o.maxStreams, o.maxConns)
	}
	dir, err := os.MkdirTemp("", "events-bench")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	redisURL, st, stopRedis, err := startRedis(dir)
	if err != nil {
		return nil, err
	}
	defer stopRedis()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ed, err := startEventsEdge(self, redisURL, o)
	if err != nil {
		return nil, err
	}
	defer ed.stop()
	var ref *eventsEdge
	if o.rounds > 0 {
		if ref, err = startEventsEdge(self, redisURL, o); err != nil {
			return nil, err
		}
		defer ref.stop()
	}
	rep := &eventsReport{}
	fmt.Fprintf(w, "make bench-events: %d subscribers of /api/events on one edge, 127.0.0.1, %d CPUs shared by the edge, the subscribers, Redis and wrk; EDGE_MAX_CONNECTIONS=%d EDGE_MAX_EVENT_STREAMS=%d, RLIMIT_NOFILE %d; load average %s\n",
		o.subscribers, runtime.NumCPU(), o.maxConns, o.maxStreams, limit, loadAvg())

	time.Sleep(500 * time.Millisecond) // the edge's first view and events in
	rep.rssBefore = rssMB(ed.pid())
	before, err := scrape(ed.ops, runtimeSeries...)
	if err != nil {
		return nil, err
	}

	prices := make([]float64, o.changes)
	for k := range prices {
		prices[k] = changePrice(k).InexactFloat64()
	}
	epoch := time.Now()
	fl := newFleet(ed.addr, o.subscribers, prices, epoch)
	defer fl.close()
	start := time.Now()
	if err := fl.connect(o.subscribers, 256, o.connectTimeout); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "connected %d subscribers in %.2f s, each with the current value of every event\n", o.subscribers, time.Since(start).Seconds())
	time.Sleep(time.Second)
	rep.rssWith = rssMB(ed.pid())
	with, err := scrape(ed.ops, runtimeSeries...)
	if err != nil {
		return nil, err
	}
	if int(with[mOpen]) != o.subscribers {
		return nil, fmt.Errorf("the edge counts %.0f open streams, want %d", with[mOpen], o.subscribers)
	}
	if o.heapProfile != "" {
		if err := saveProfile(ed.ops, "heap?gc=1", o.heapProfile); err != nil {
			return nil, err
		}
	}

	// The changes: one market document at a time, the next once every
	// subscriber has the last (or after waitEvent).
	var profiled chan error
	if o.cpuProfile != "" {
		profiled = make(chan error, 1)
		go func() {
			profiled <- saveProfile(ed.ops, "profile?seconds="+strconv.Itoa(max(1, o.changes*3/10)), o.cpuProfile)
		}()
	}
	cpu0, self0 := cpuTicks(ed.pid()), selfCPU()
	writes := make([]int64, o.changes)
	ctx := context.Background()
	for k := range o.changes {
		time.Sleep(200 * time.Millisecond)
		m := edgetest.Market()
		p := changePrice(k)
		m.PriceUSD = &p
		now := time.Now()
		writes[k] = int64(now.Sub(epoch))
		if err := edgetest.WriteDoc(ctx, st, contract.DomainMarket, m, now, contract.DefaultTimings[contract.DomainMarket].TTL); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(o.waitEvent)
		for fl.got[k].Load() < int64(o.subscribers) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // the last writes counted
	rep.cpu, rep.clientCPU = float64(cpuTicks(ed.pid())-cpu0)/clockTicks, selfCPU()-self0
	if profiled != nil {
		if err := <-profiled; err != nil {
			return nil, err
		}
	}
	after, err := scrape(ed.ops, runtimeSeries...)
	if err != nil {
		return nil, err
	}
	rep.rssAfter = rssMB(ed.pid())
	if o.heapProfile != "" {
		if err := saveProfile(ed.ops, "heap?gc=1", o.heapProfile+".after"); err != nil {
			return nil, err
		}
	}
	rep.delivered = after[mDelivered] - with[mDelivered]
	rep.fanoutFirst, rep.fanoutChanges = with[mFanout]-before[mFanout], after[mFanout]-with[mFanout]
	if rep.delivered > 0 {
		rep.cpuPerEvent = rep.cpu * 1e6 / rep.delivered
	}
	for k := range o.changes {
		first, last := math.Inf(1), 0.0
		for i := range o.subscribers {
			r := fl.recv[k][i].Load()
			if r == 0 {
				rep.missed++
				continue
			}
			l := float64(r-writes[k]) / 1e6
			rep.lat = append(rep.lat, l)
			first, last = min(first, l), max(last, l)
		}
		rep.first, rep.last = append(rep.first, first), append(rep.last, last)
	}

	// make bench's edge row, with the subscribers connected and without
	if o.rounds > 0 {
		for _, p := range paths {
			var rw, ro []result
			for r := range o.rounds {
				for j := range 2 {
					e, into := ed, &rw
					if (j+r)%2 == 1 {
						e, into = ref, &ro
					}
					x, err := wrk("http://"+e.addr+p, e.pid(), o.wrkDuration, o.wrkConns)
					if err != nil {
						return nil, err
					}
					*into = append(*into, x)
				}
			}
			rep.rows = append(rep.rows, edgeRow{path: p, with: median(rw), without: median(ro)})
		}
	}
	rep.ended = fl.ended.Load()
	final, err := scrape(ed.ops, mOpen)
	if err != nil {
		return nil, err
	}
	if rep.ended > 0 || int(final[mOpen]) != o.subscribers {
		return nil, fmt.Errorf("%d streams ended during the run (the edge counts %.0f open, want %d)", rep.ended, final[mOpen], o.subscribers)
	}
	printEvents(w, o, rep, [3]map[string]float64{before, with, after})
	fmt.Fprintf(w, "\nload average at the end: %s (the figures above are this machine's, shared with whatever else ran)\n", loadAvg())
	return rep, nil
}

// loadAvg is the machine's 1, 5 and 15 minute load averages: a loaded
// machine moves latency and throughput, not memory.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// selfCPU is this process's own user and system CPU time in seconds
// (the subscribers; its children, the edges, are not counted).
func selfCPU() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// saveProfile writes the edge's /debug/pprof/<which> to path.
func saveProfile(ops, which, path string) error {
	resp, err := http.Get("http://" + ops + "/debug/pprof/" + which)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", which, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// quantile is the nearest-rank q-quantile of sorted v.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// printEvents prints the figures; rt are the edge's runtime series
// before the subscribers, with them, and after the changes.
func printEvents(w io.Writer, o eventsOptions, rep *eventsReport, rt [3]map[string]float64) {
	n := float64(o.subscribers)
	fmt.Fprintf(w, "edge RSS: %.1f MiB before the subscribers, %.1f MiB with them (%.1f KiB per stream), %.1f MiB after the changes\n",
		rep.rssBefore, rep.rssWith, (rep.rssWith-rep.rssBefore)*1024/n, rep.rssAfter)
	for i, when := range []string{"with the subscribers", "after the changes"} {
		a, b := rt[0], rt[i+1]
		fmt.Fprintf(w, "  per stream, Go runtime, %s: %+.2f goroutines, stacks %+.1f KiB, heap in use %+.1f KiB\n", when,
			(b[mGoroutines]-a[mGoroutines])/n, (b[mStacks]-a[mStacks])/1024/n, (b[mHeap]-a[mHeap])/1024/n)
	}
	slices.Sort(rep.lat)
	last := slices.Clone(rep.last)
	slices.Sort(last)
	fmt.Fprintf(w, "fan-out, market document written to Redis -> price event parsed by the subscriber, %d changes x %d subscribers (%d received, %d missed within %s):\n",
		o.changes, o.subscribers, len(rep.lat), rep.missed, o.waitEvent)
	fmt.Fprintf(w, "  per subscriber:          p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", quantile(rep.lat, .5), quantile(rep.lat, .99), quantile(rep.lat, 1))
	firsts := slices.Clone(rep.first)
	slices.Sort(firsts)
	fmt.Fprintf(w, "  per change, the first:   p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms  (Redis, the edge's read and render of the new view, the hub)\n",
		quantile(firsts, .5), quantile(firsts, .99), quantile(firsts, 1))
	fmt.Fprintf(w, "  per change, the last:    p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", quantile(last, .5), quantile(last, .99), quantile(last, 1))
	fmt.Fprintf(w, "CPU per delivered event: %.1f µs (edge utime+stime %.2f s over %.0f events delivered, %.2f per change and subscriber: price and market; the renders of the new views included)\n",
		rep.cpuPerEvent, rep.cpu, rep.delivered, rep.delivered/n/float64(o.changes))
	fmt.Fprintf(w, "  the subscribers (this process) used %.2f s of CPU meanwhile, on the same %d CPUs\n", rep.clientCPU, runtime.NumCPU())
	rowOK := true
	if len(rep.rows) > 0 {
		fmt.Fprintf(w, "\nedge row (make bench's: wrk -t2 -c%d -d%s, %d interleaved rounds, medians), the edge with %d subscribers connected vs the same edge build without:\n",
			o.wrkConns, o.wrkDuration, o.rounds, o.subscribers)
		fmt.Fprintf(w, "%-18s | %7s %6s %5s | %7s %6s %5s | %s\n", "path", "without", "p99", "cpu", "with", "p99", "cpu", "with/without rps p99 cpu")
		for _, r := range rep.rows {
			a, b := r.without, r.with
			fmt.Fprintf(w, "%-18s | %7.0f %6.2f %5.1f | %7.0f %6.2f %5.1f | %5.2f %5.2f %5.2f\n", r.path, a.rps, a.p99, a.cpu, b.rps, b.p99, b.cpu,
				b.rps/a.rps, b.p99/a.p99, b.cpu/a.cpu)
			rowOK = rowOK && b.rps/a.rps >= 1-targetEdgeRatio && b.p99/a.p99 <= 1+targetEdgeRatio
		}
		fmt.Fprintln(w, "(latencies in ms, cpu in µs per request)")
	}
	p99 := quantile(rep.lat, .99)
	fmt.Fprintf(w, "\ntarget %d subscribers within %d MiB of edge RSS: %.1f MiB: %s\n", o.subscribers, targetRSSMiB, rep.rssWith, verdict(rep.rssWith <= targetRSSMiB))
	fmt.Fprintf(w, "target one change to all within p99 %d ms: p99 %.1f ms, %d missed: %s\n", targetP99ms, p99, rep.missed, verdict(p99 <= targetP99ms && rep.missed == 0))
	if len(rep.rows) > 0 {
		fmt.Fprintf(w, "target edge row within 5 %% of the run without subscribers (throughput >= 0.95x, p99 <= 1.05x on every path): %s\n", verdict(rowOK))
	}
	fmt.Fprintf(w, "\ndocs/benchmarks.md tables (make bench-events):\n\n%s\n\n| subscribers | edge RSS before / with | per subscriber p50 / p99 / max | last subscriber p50 / p99 | CPU per event |\n|---|---|---|---|---|\n", stamp.Line("make bench-events"))
	fmt.Fprintf(w, "| %s | %.1f / %.1f MiB | %s / %s / %s | %s / %s | %.1f µs |\n", thousands(n), rep.rssBefore, rep.rssWith,
		ms(quantile(rep.lat, .5)), ms(p99), ms(quantile(rep.lat, 1)), ms(quantile(last, .5)), ms(quantile(last, .99)), rep.cpuPerEvent)
	if len(rep.rows) > 0 {
		fmt.Fprintf(w, "\n| path | without subscribers rps / p99 / CPU | with %s rps / p99 / CPU | with vs without |\n|---|---|---|---|\n", thousands(n))
		for _, r := range rep.rows {
			a, b := r.without, r.with
			fmt.Fprintf(w, "| %s | %s / %s / %.0f µs | %s / %s / %.0f µs | %.2f× / %.2f× / %.2f× |\n", r.path, thousands(a.rps), ms(a.p99), a.cpu,
				thousands(b.rps), ms(b.p99), b.cpu, b.rps/a.rps, b.p99/a.p99, b.cpu/a.cpu)
		}
	}
}

var errNoRedis = errors.New("redis-server is not installed (make deps)")

// requireTools checks what the run needs.
func requireTools(rounds int) error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return errNoRedis
	}
	if _, err := exec.LookPath("wrk"); rounds > 0 && err != nil {
		return errors.New("wrk is not installed (events.sh installs it)")
	}
	return nil
}
