package main

// The boundary row: requests while the edge's data crosses its freshness
// boundaries. The market and supply documents are rewritten every second
// (as collectors polling every second would), with a stale-after of one
// second, so that a boundary (stale-after, or a TTL) is crossed just before
// each new document; wrk asks /api/market-data in brotli meanwhile. The
// same edge build with a stale-after of 90 s under the same writes (renders,
// no boundary) and without writes (quiet) are the references. Target: the
// boundary run's p99 within 1.3× of the run with the same writes and no
// boundary (no request waits at a boundary); against quiet, printed too,
// the renders' own CPU counts as well.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/services/edge/edgetest"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// benchStaleEnv sets the market and supply stale-after of a serve-edge
// child (its refresh is one second, its TTL three stale-afters).
const benchStaleEnv = "BENCH_STALE_AFTER"

// boundaryTimings applies benchStaleEnv to common.
func boundaryTimings(common *config.Common) error {
	s := os.Getenv(benchStaleEnv)
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%s: %w", benchStaleEnv, err)
	}
	t := config.DomainTiming{Refresh: time.Second, StaleAfter: d, TTL: 3 * d}
	common.Market, common.Supply = t, t
	return nil
}

// latency is one wrk run's figures for the boundary row, in ms.
type latency struct{ p50, p99, max float64 }

// reMax is the Max column of wrk's thread latency line.
var reMax = regexp.MustCompile(`(?m)^\s+Latency\s+\S+\s+\S+\s+([0-9.]+)(us|ms|s)\s`)

// parseMax reads wrk's maximum latency, in ms.
func parseMax(out []byte) (float64, error) {
	m := reMax.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("wrk output without a Latency line")
	}
	return toMS(string(m[1]), string(m[2])), nil
}

func toMS(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "us":
		return f / 1000
	case "s":
		return f * 1000
	}
	return f
}

// wrkBrotli runs wrk against url asking for brotli; non-2xx answers fail
// the run (a TTL crossed without a new document would give 503s).
func wrkBrotli(url string, d time.Duration, conns int) (latency, error) {
	out, err := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s",
		"--latency", "--timeout", "5s", "-H", "Accept-Encoding: br", url).CombinedOutput()
	if err != nil {
		return latency{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	var l latency
	for _, m := range reLat.FindAllSubmatch(out, -1) {
		v := toMS(string(m[2]), string(m[3]))
		if string(m[1]) == "50" {
			l.p50 = v
		} else {
			l.p99 = v
		}
	}
	if l.max, err = parseMax(out); err != nil {
		return l, fmt.Errorf("%w:\n%s", err, out)
	}
	if regexp.MustCompile(`Non-2xx`).Match(out) {
		return l, fmt.Errorf("wrk saw non-2xx answers:\n%s", out)
	}
	return l, nil
}

// writer rewrites the market and supply documents every second, the
// price moving, while on.
type writer struct {
	st   *store.Store
	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

func (w *writer) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			now := time.Now()
			m := edgetest.Market()
			p := decimal.New(1234+int64(i%50), -8)
			m.PriceUSD = &p
			_ = edgetest.WriteDoc(ctx, w.st, contract.DomainMarket, m, now, 10*time.Minute)
			_ = edgetest.WriteDoc(ctx, w.st, contract.DomainSupply, edgetest.Supply(), now, 10*time.Minute)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (w *writer) halt() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
		<-w.done
		w.stop = nil
	}
}

// boundaryRow measures the three runs, interleaved over rounds, and
// prints their medians and the verdict.
func boundaryRow(self, redisURL string, st *store.Store, d time.Duration, conns, rounds int) error {
	d = max(d, 8*time.Second)
	start := func(stale string) (string, *exec.Cmd, error) {
		addr, err := freeAddr()
		if err != nil {
			return "", nil, err
		}
		cmd := exec.Command(self, "serve-edge", addr, redisURL)
		cmd.Env = append(os.Environ(), benchStaleEnv+"="+stale)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return "", nil, err
		}
		return addr, cmd, waitHTTP("http://" + addr + paths[2])
	}
	w := &writer{st: st}
	defer w.halt()
	w.start() // documents fresh for the short stale-after's edge to start
	time.Sleep(1100 * time.Millisecond)
	slowAddr, slowCmd, err := start("90s")
	if err != nil {
		return err
	}
	defer func() { _ = slowCmd.Process.Kill(); _ = slowCmd.Wait() }()
	fastAddr, fastCmd, err := start("1s")
	if err != nil {
		return err
	}
	defer func() { _ = fastCmd.Process.Kill(); _ = fastCmd.Wait() }()

	names := []string{"quiet", "renders", "boundary"}
	res := make([][]latency, len(names))
	for r := range rounds {
		for k := range names {
			j := (k + r) % len(names)
			url := "http://" + slowAddr + paths[2]
			switch names[j] {
			case "quiet":
				w.halt()
			case "renders":
				w.start()
			case "boundary":
				w.start()
				url = "http://" + fastAddr + paths[2]
			}
			time.Sleep(1100 * time.Millisecond) // the writer's first document in
			l, err := wrkBrotli(url, d, conns)
			if err != nil {
				return fmt.Errorf("%s run: %w", names[j], err)
			}
			res[j] = append(res[j], l)
		}
	}
	med := make([]latency, len(names))
	for i := range names {
		med[i] = medianLatency(res[i])
	}
	fmt.Printf("\nBoundaries (%s, Accept-Encoding: br, wrk -c%d -d%s, %d interleaved rounds, medians): market and supply rewritten every second; boundary: stale-after 1 s, so one is crossed before each new document; renders: the same writes, stale-after 90 s; quiet: no writes\n",
		paths[2], conns, d, rounds)
	fmt.Printf("%-9s %8s %8s %8s\n", "run", "p50", "p99", "max")
	for i, n := range names {
		fmt.Printf("%-9s %8.2f %8.2f %8.2f\n", n, med[i].p50, med[i].p99, med[i].max)
	}
	q, b := med[0], med[2]
	fmt.Printf("boundary vs quiet: p99 %.2f×, max %.2f×; renders vs quiet: p99 %.2f×\n", b.p99/q.p99, b.max/q.max, med[1].p99/q.p99)
	r := med[1]
	fmt.Printf("boundary vs renders (the same writes, no boundary crossed): p99 %.2f×, max %.2f×\n", b.p99/r.p99, b.max/r.max)
	fmt.Printf("target boundary p99 within 1.3× of the same writes without boundaries (renders): %s\n", verdict(b.p99/r.p99 <= 1.3))
	fmt.Printf("target boundary p99 within 1.3× of quiet (no writes at all; the renders' CPU counts here): %s\n", verdict(b.p99/q.p99 <= 1.3))
	labels := map[string]string{
		"quiet":    "quiet: no writes",
		"renders":  "renders: market and supply rewritten every second, stale-after 90 s",
		"boundary": "boundary: the same writes, stale-after 1 s (a boundary crossed before each new document)",
	}
	fmt.Printf("\ndocs/benchmarks.md table (boundaries):\n\n%s\n\n| run (`%s`, br) | p50 | p99 | max |\n|---|---|---|---|\n", stamp.Line("make bench"), paths[2])
	for i, n := range names {
		fmt.Printf("| %s | %s | %s | %s |\n", labels[n], ms(med[i].p50), ms(med[i].p99), ms(med[i].max))
	}
	return nil
}

func medianLatency(ls []latency) latency {
	pick := func(f func(latency) float64) float64 {
		v := make([]float64, len(ls))
		for i, l := range ls {
			v[i] = f(l)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return latency{p50: pick(func(l latency) float64 { return l.p50 }), p99: pick(func(l latency) float64 { return l.p99 }),
		max: pick(func(l latency) float64 { return l.max })}
}
