// Command bench measures the holders enumeration at scale: it starts the
// Solana simulator with a token of -accounts token accounts on loopback,
// records its getProgramAccounts answer once, serves that very response
// to each implementation in a process of its own, and reports wall time,
// accounts per second and peak memory (VmHWM, the peak RSS) side by side:
//
//   - ours: the holders collector's streaming decoder (Collector.Enumerate);
//   - solana-go: rpc.Client.GetProgramAccountsWithOpts (v1.14.0), then the
//     same owner count over its result.
//
// A last row runs ours against the live simulator with gzip, the path a
// real node takes. Then the live path (live.go): the collector with
// HOLDERS_LIVE under a stream of holder changes. Run it with
// `hack/bench/holders/run.sh` (`-only live` for the live path alone).
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
)

// result is what a child prints as its last line.
type result struct {
	Impl            string  `json:"impl"`
	WallSeconds     float64 `json:"wall_seconds"`
	Accounts        uint64  `json:"accounts"`
	Holders         uint64  `json:"holders"`
	NonZero         uint64  `json:"non_zero"`
	PeakRSSMiB      float64 `json:"peak_rss_mib"`
	ChildMaxRSSMiB  float64 `json:"-"`
	AccountsPerSec  float64 `json:"-"`
	ResponseMiB     float64 `json:"-"`
	ComparedToTruth string  `json:"-"`
}

func main() {
	var (
		accounts = flag.Int("accounts", 1_000_000, "token accounts of the simulated mint")
		impl     = flag.String("impl", "", "internal: run one implementation (ours, ours-gzip, solana-go) in this process")
		url      = flag.String("url", "", "internal: RPC URL for -impl")
		mint     = flag.String("mint", "", "internal: mint for -impl")
		only     = flag.String("only", "", "run only this implementation (ours, solana-go, ours-gzip)")
		rounds   = flag.Int("rounds", 1, "runs of each implementation; the median wall time and the highest peak RSS are reported")
		cpuprof  = flag.String("cpuprofile", "", "write a CPU profile of each run of ours (replayed) to this file")
		rate     = flag.Int("rate", 1000, "live: holder changes a second")
		seconds  = flag.Int("seconds", 30, "live: seconds of changes")
		resync   = flag.Duration("resync", 25*time.Second, "live: the collector's HOLDERS_RESYNC, counted from its anchor's start (one resync in the last seconds of the stream at the default -seconds)")
	)
	flag.Parse()
	var err error
	switch {
	case *impl == "live":
		err = liveChild(*url, *mint, *resync)
	case *impl != "":
		err = child(*impl, *url, *mint, *cpuprof)
	default:
		err = parent(*accounts, *only, *rounds, *cpuprof, *rate, *seconds, *resync)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func benchMint() string {
	h := sha256.Sum256([]byte("holders bench mint"))
	return base58.Encode(h[:])
}

// gpaOpts are the options of the exact request solana-go sends, so that
// the recorded answer is the one both implementations read.
func gpaOpts(mint string) *rpc.GetProgramAccountsOpts {
	zero, forty := uint64(32), uint64(40)
	return &rpc.GetProgramAccountsOpts{
		Encoding:  solana.EncodingBase64,
		DataSlice: &rpc.DataSlice{Offset: &zero, Length: &forty},
		Filters: []rpc.RPCFilter{
			{DataSize: 165},
			{Memcmp: &rpc.RPCFilterMemcmp{Offset: 0, Bytes: solana.Base58(solana.MustPublicKeyFromBase58(mint).Bytes())}},
		},
	}
}

func parent(n int, only string, rounds int, cpuprofile string, rate, seconds int, resync time.Duration) error {
	ctx := context.Background()
	mint := benchMint()
	sim := solanasim.New()
	if err := sim.AddToken(solanasim.Token{Mint: mint, Program: solanasim.ProgramToken, Decimals: 9,
		Supply:  999_999_999_123_456_789,
		Holders: solanasim.Holders{Accounts: n, Seed: 11, MultiAccountShare: 0.3, ZeroShare: 0.1}}); err != nil {
		return err
	}
	simURL, err := sim.Start(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sim.Close() }()
	truth, _ := sim.Truth(mint)

	// Record the simulator's answer to solana-go's request once.
	file, err := os.CreateTemp("", "holders-bench-*.json")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(file.Name()); _ = file.Close() }()
	if err := record(ctx, simURL, mint, file); err != nil {
		return err
	}
	st, _ := file.Stat()
	replayURL, stopReplay, err := replay(file)
	if err != nil {
		return err
	}
	defer stopReplay()

	fmt.Printf("holders bench: %d token accounts (truth: %d holders, %d non-zero), getProgramAccounts response %.1f MiB, replayed from loopback\n",
		truth.TokenAccounts, truth.Holders, truth.NonZeroAccounts, float64(st.Size())/(1<<20))
	runs := []struct{ impl, url string }{
		{"ours", replayURL}, {"solana-go", replayURL}, {"ours-gzip", simURL},
	}
	var rows []result
	for _, r := range runs {
		if only != "" && r.impl != only {
			continue
		}
		var runs []result
		for range max(rounds, 1) {
			prof := ""
			if r.impl == "ours" {
				prof = cpuprofile
			}
			res, err := runChild(r.impl, r.url, mint, prof)
			if err != nil {
				return fmt.Errorf("%s: %w", r.impl, err)
			}
			runs = append(runs, res)
		}
		res := medianRun(runs)
		res.ResponseMiB = float64(st.Size()) / (1 << 20)
		res.ComparedToTruth = "exact"
		if res.Holders != uint64(truth.Holders) || res.Accounts != uint64(truth.TokenAccounts) || res.NonZero != uint64(truth.NonZeroAccounts) {
			res.ComparedToTruth = "WRONG"
		}
		rows = append(rows, res)
	}
	fmt.Printf("\n%-34s %10s %14s %14s %12s %8s\n", "implementation", "wall", "accounts/s", "peak RSS", "holders", "count")
	for _, r := range rows {
		name := map[string]string{
			"ours":      "ours (streaming, replayed)",
			"solana-go": "solana-go GetProgramAccountsWithOpts",
			"ours-gzip": "ours (live simulator, gzip)",
		}[r.Impl]
		fmt.Printf("%-34s %9.2fs %14.0f %10.1f MiB %12d %8s\n", name, r.WallSeconds, r.AccountsPerSec, r.PeakRSSMiB, r.Holders, r.ComparedToTruth)
	}
	if only == "live" {
		return liveBench(sim, simURL, mint, st.Size(), rate, seconds, resync)
	}
	if only != "" {
		return checkExact(rows, truth)
	}
	ours, sg := rows[0], rows[1]
	fmt.Printf("\ndocs/benchmarks.md table:\n\n%s\n\n| implementation | wall | accounts/s | peak RSS | holders |\n|---|---|---|---|---|\n", stamp.Line("make bench-holders"))
	for _, r := range []struct {
		name string
		res  result
	}{{"ours (streaming decoder on one goroutine, owner set on another)", ours}, {"solana-go `GetProgramAccountsWithOpts`", sg}} {
		fmt.Printf("| %s | %.2f s | %s | %.1f MiB | %s, %s |\n", r.name, r.res.WallSeconds, stamp.Thousands(r.res.AccountsPerSec),
			r.res.PeakRSSMiB, stamp.Thousands(float64(r.res.Holders)), r.res.ComparedToTruth)
	}
	speedup := sg.WallSeconds / ours.WallSeconds
	fmt.Printf("\nspeed-up over solana-go on the same response: %.1fx (target >= 5x: %s)\n", speedup, verdict(speedup >= 5))
	fmt.Printf("peak RSS of ours at %d accounts: %.1f MiB (target <= 96 MiB: %s); solana-go: %.1f MiB\n",
		n, ours.PeakRSSMiB, verdict(ours.PeakRSSMiB <= 96), sg.PeakRSSMiB)
	fmt.Printf("ours at %d accounts: %.2f s wall (target <= 1.2 s: %s), %.1f MiB peak RSS (target <= 64 MiB: %s)\n",
		n, ours.WallSeconds, verdict(ours.WallSeconds <= 1.2), ours.PeakRSSMiB, verdict(ours.PeakRSSMiB <= 64))
	if err := checkExact(rows, truth); err != nil {
		return err
	}
	return liveBench(sim, simURL, mint, st.Size(), rate, seconds, resync)
}

// checkExact fails unless every row counted the truth.
func checkExact(rows []result, truth solanasim.Truth) error {
	for _, r := range rows {
		if r.ComparedToTruth != "exact" {
			return fmt.Errorf("%s counted %d holders / %d accounts, truth %d / %d", r.Impl, r.Holders, r.Accounts, truth.Holders, truth.TokenAccounts)
		}
	}
	return nil
}

// medianRun is the run of median wall time, with the highest peak RSS of
// all runs and the counts of the first (each run is checked on its own).
func medianRun(runs []result) result {
	for _, r := range runs[1:] {
		if r.Holders != runs[0].Holders || r.Accounts != runs[0].Accounts || r.NonZero != runs[0].NonZero {
			runs[0].Holders = 0 // makes the row WRONG
		}
	}
	peak := 0.0
	for _, r := range runs {
		peak = max(peak, r.PeakRSSMiB)
	}
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(a.WallSeconds, b.WallSeconds) })
	m := sorted[len(sorted)/2]
	m.Holders, m.Accounts, m.NonZero = runs[0].Holders, runs[0].Accounts, runs[0].NonZero
	m.PeakRSSMiB = peak
	return m
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// record writes the simulator's answer to solana-go's request into w.
func record(ctx context.Context, url, mint string, w io.Writer) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts",
		"params": []any{solana.TokenProgramID.String(), map[string]any{"encoding": "base64",
			"dataSlice": gpaOpts(mint).DataSlice, "filters": gpaOpts(mint).Filters}}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("recording: HTTP %d", resp.StatusCode)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// replay serves the recorded response to every POST on a loopback port.
func replay(f *os.File) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
		_, _ = io.Copy(w, io.NewSectionReader(f, 0, st.Size()))
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// runChild runs one implementation in a fresh process, so that its peak
// RSS is its own.
func runChild(impl, url, mint, cpuprofile string) (result, error) {
	self, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	var out bytes.Buffer
	cmd := exec.Command(self, "-impl", impl, "-url", url, "-mint", mint, "-cpuprofile", cpuprofile)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%w: %s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return result{}, fmt.Errorf("child output %q: %w", out.String(), err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.ChildMaxRSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
		res.PeakRSSMiB = max(res.PeakRSSMiB, res.ChildMaxRSSMiB)
	}
	res.AccountsPerSec = float64(res.Accounts) / res.WallSeconds
	return res, nil
}

func child(impl, url, mint, cpuprofile string) error {
	ctx := context.Background()
	var res result
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	started := time.Now()
	switch impl {
	case "ours", "ours-gzip":
		mem := store.NewMemory()
		cfg := holders.DefaultConfig()
		cfg.Program = holders.ProgramToken
		// The scan, as the rows say: with the live count (HOLDERS_LIVE's
		// default, auto) the poll first tries a subscription, which the
		// replay has none of, and the simulator's anchors a tally of every
		// account: that is the live rows' figure.
		cfg.Live = "false"
		cfg.Gzip = impl == "ours-gzip"
		c, err := holders.New(config.Common{SolanaRPCURL: config.Secret(url), HoldersMethod: contract.HoldersMethodGPA},
			config.Token{Mint: mint}, cfg, collector.Deps{Store: store.New(mem, mint), Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		r, err := c.Enumerate(ctx)
		if err != nil {
			return err
		}
		doc := r.Doc.(contract.Holders)
		res = result{Accounts: doc.TokenAccounts, Holders: doc.Holders, NonZero: doc.NonZeroAccounts}
	case "solana-go":
		cl := rpc.New(url)
		accs, err := cl.GetProgramAccountsWithOpts(ctx, solana.TokenProgramID, gpaOpts(mint))
		if err != nil {
			return err
		}
		owners := make(map[solana.PublicKey]struct{})
		for _, a := range accs {
			data := a.Account.Data.GetBinary()
			if len(data) != 40 {
				return errors.New("solana-go: account data is not 40 bytes")
			}
			res.Accounts++
			if amount := uint64FromLE(data[32:40]); amount > 0 {
				res.NonZero++
				owners[solana.PublicKeyFromBytes(data[:32])] = struct{}{}
			}
		}
		res.Holders = uint64(len(owners))
	default:
		return fmt.Errorf("unknown -impl %q", impl)
	}
	res.Impl = impl
	res.WallSeconds = time.Since(started).Seconds()
	res.PeakRSSMiB = vmHWM()
	return json.NewEncoder(os.Stdout).Encode(res)
}

func uint64FromLE(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// vmHWM is the process's peak resident set size in MiB.
func vmHWM() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
