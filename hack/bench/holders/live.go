package main

// The live path of the holders collector, `-only live`: the
// collector runs with HOLDERS_LIVE in a child process against the
// simulator's 1,000,000-account token, anchors its count on its own
// enumeration, then takes a stream of holder changes made by the parent
// at -rate a second for -seconds. The child prints each document it
// publishes (slot, time); the parent matches every change to the first
// document at or past its slot: the time from the change to the
// published count. The child reports its peak RSS and the CPU it spent on
// the stream; the parent measures the wire size of a notification on a
// socket of its own, and sets the bytes a day read from the node, live
// against today's scans. The collector's HOLDERS_RESYNC (-resync) puts
// one resync inside the stream: the child reports its peak RSS before
// the resync was due and with it (the new tally beside the old one until
// they are compared), and the resync's comparison of the two counts.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tokendata/tokendata/hack/bench/stamp"
	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/solanasim"
	"github.com/tokendata/tokendata/shared/store"
)

// liveLine is a line the live child prints: a published document, its
// readiness, or its final figures.
type liveLine struct {
	Kind          string  `json:"kind"` // published, ready, done
	Slot          uint64  `json:"slot,omitempty"`
	AtNanos       int64   `json:"at,omitempty"`
	Holders       uint64  `json:"holders,omitempty"`
	Notifications uint64  `json:"notifications,omitempty"`
	AnchorSeconds float64 `json:"anchor_seconds,omitempty"`
	PeakRSSMiB    float64 `json:"peak_rss_mib,omitempty"`
	RSSMiB        float64 `json:"rss_mib,omitempty"`
	CPUSeconds    float64 `json:"cpu_seconds,omitempty"`
	// PeakBeforeResyncMiB is the highest RSS sampled (every 20 ms)
	// before the resync was due, CPUBeforeResync the CPU spent from the
	// anchor until then; ResyncDueNanos is when it was due; Resync the
	// resync's comparison.
	PeakBeforeResyncMiB float64                 `json:"peak_before_resync_mib,omitempty"`
	CPUBeforeResync     float64                 `json:"cpu_before_resync,omitempty"`
	ResyncDueNanos      int64                   `json:"resync_due,omitempty"`
	Resync              *contract.HoldersResync `json:"resync,omitempty"`
}

// liveChild runs the collector with HOLDERS_LIVE until its stdin closes,
// printing each document it publishes as the store announces it.
func liveChild(url, mint string, resync time.Duration) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := store.NewMemory()
	st := store.New(mem, mint)
	cfg := holders.DefaultConfig()
	cfg.Program, cfg.Live, cfg.Commitment = holders.ProgramToken, "true", "processed"
	cfg.PublishInterval, cfg.Resync = time.Second, resync
	c, err := holders.New(config.Common{SolanaRPCURL: config.Secret(url), HoldersMethod: contract.HoldersMethodGPA},
		config.Token{Mint: mint}, cfg, collector.Deps{Store: st, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	updates, closeUpdates, err := st.Updates(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = closeUpdates() }()
	started := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	out := json.NewEncoder(os.Stdout)
	stdin := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stdin) }()
	var (
		last     uint64
		cpuStart float64
		ready    bool
	)
	// The RSS before the resync: sampled until the resync is due (the
	// first live document says when).
	type before struct{ peak, cpu float64 }
	resyncDue := make(chan time.Time, 1)
	atResync := make(chan before, 1)
	go func() {
		var b before
		var due time.Time
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for due.IsZero() || time.Now().Before(due) {
			select {
			case <-ctx.Done():
				atResync <- b
				return
			case due = <-resyncDue:
			case <-t.C:
			}
			b.peak = max(b.peak, procStatusMiB("VmRSS"))
		}
		b.cpu = cpuSeconds()
		atResync <- b
	}()
	var due time.Time
	for {
		select {
		case <-stdin:
			var h contract.Holders
			if d, err := st.Read(ctx, contract.DomainHolders); err == nil {
				_ = d.Decode(&h)
			}
			cancel()
			<-done
			var n uint64
			var r *contract.HoldersResync
			if h.Live != nil {
				n, r = h.Live.Notifications, h.Live.Resync
			}
			b := <-atResync
			return out.Encode(liveLine{Kind: "done", Slot: h.Slot, Holders: h.Holders, Notifications: n,
				PeakRSSMiB: procStatusMiB("VmHWM"), RSSMiB: procStatusMiB("VmRSS"), CPUSeconds: cpuSeconds() - cpuStart,
				PeakBeforeResyncMiB: b.peak, CPUBeforeResync: max(b.cpu-cpuStart, 0), ResyncDueNanos: due.UnixNano(), Resync: r})
		case d := <-updates:
			if d != contract.DomainHolders {
				continue
			}
		}
		at := time.Now()
		d, err := st.Read(ctx, contract.DomainHolders)
		if err != nil {
			continue
		}
		var h contract.Holders
		if d.Decode(&h) != nil || (ready && h.Slot == last) {
			continue
		}
		last = h.Slot
		if !ready {
			if h.Method != contract.HoldersMethodLive {
				continue
			}
			ready, cpuStart = true, cpuSeconds()
			if h.Live != nil {
				due = h.Live.NextResyncAt
				resyncDue <- due
			}
			if err := out.Encode(liveLine{Kind: "ready", Slot: h.Slot, Holders: h.Holders, AnchorSeconds: time.Since(started).Seconds(),
				RSSMiB: procStatusMiB("VmRSS"), PeakRSSMiB: procStatusMiB("VmHWM")}); err != nil {
				return err
			}
			continue
		}
		if err := out.Encode(liveLine{Kind: "published", Slot: h.Slot, AtNanos: at.UnixNano(), Holders: h.Holders}); err != nil {
			return err
		}
	}
}

// procStatusMiB reads a memory line of /proc/self/status, in MiB.
func procStatusMiB(key string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			var kib float64
			_, _ = fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kib)
			return kib / 1024
		}
	}
	return 0
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// liveBench is the parent's side of the live path.
func liveBench(sim *solanasim.Server, simURL, mint string, responseBytes int64, rate, seconds int, resync time.Duration) error {
	frame, err := notificationBytes(sim, simURL, mint)
	if err != nil {
		return fmt.Errorf("measuring a notification: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-impl", "live", "-url", simURL, "-mint", mint, "-resync", resync.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan liveLine, 1<<16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l liveLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				lines <- l
			}
		}
	}()
	var ready liveLine
	select {
	case ready = <-lines:
	case <-time.After(3 * time.Minute):
		return errors.New("the live child was not anchored within 3 minutes")
	}
	if ready.Kind != "ready" {
		return fmt.Errorf("the live child said %+v first", ready)
	}

	before, _ := sim.Truth(mint)
	// The stream: rate changes a second, in batches every 10 ms: half new
	// holders, half of them sold out again later (each a notification).
	type made struct {
		slot uint64
		at   time.Time
	}
	var changes []made
	var open []string
	r := rand.New(rand.NewPCG(36, 1))
	batch := max(rate/100, 1)
	tick := time.NewTicker(10 * time.Millisecond)
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for time.Now().Before(end) {
		<-tick.C
		for range batch {
			var ch solanasim.HolderChange
			var err error
			if len(open) > 0 && r.IntN(2) == 0 {
				i := r.IntN(len(open))
				ch, err = sim.SetHolderBalance(mint, open[i], 0)
				open[i] = open[len(open)-1]
				open = open[:len(open)-1]
			} else {
				ch, err = sim.OpenHolder(mint, 1+r.Uint64N(1e12))
				if err == nil {
					open = append(open, ch.Accounts[0].Address)
				}
			}
			if err != nil {
				return err
			}
			changes = append(changes, made{slot: ch.Slot, at: time.Now()})
		}
	}
	tick.Stop()
	elapsed := time.Duration(seconds) * time.Second
	time.Sleep(3 * time.Second) // the last publications
	_ = stdin.Close()
	var published []liveLine
	var done liveLine
	for l := range lines {
		switch l.Kind {
		case "published":
			published = append(published, l)
		case "done":
			done = l
		}
	}
	if done.Kind != "done" {
		return errors.New("the live child ended without its figures")
	}
	truth, _ := sim.Truth(mint)
	// Each change's latency: the first publication at or past its slot;
	// those made before the resync was due apart from those after.
	dueAt := time.Unix(0, done.ResyncDueNanos)
	var lat, latResync []time.Duration
	j := 0
	for _, c := range changes {
		for j < len(published) && published[j].Slot < c.slot {
			j++
		}
		if j == len(published) {
			return fmt.Errorf("the change at slot %d was never published (last published slot %d)", c.slot, done.Slot)
		}
		d := time.Unix(0, published[j].AtNanos).Sub(c.at)
		if done.ResyncDueNanos == 0 || c.at.Before(dueAt) {
			lat = append(lat, d)
		} else {
			latResync = append(latResync, d)
		}
	}
	if len(lat) == 0 {
		return errors.New("no change was made before the resync was due: raise -resync")
	}
	slices.Sort(lat)
	slices.Sort(latResync)
	pct := func(lat []time.Duration, p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	exact := "exact"
	if done.Holders != uint64(truth.Holders) {
		exact = fmt.Sprintf("WRONG (ledger %d)", truth.Holders)
	}
	// CPU per notification: until the resync was due, over the changes
	// made until then (each a notification), so that the resync's
	// enumeration is not counted in it.
	cpu, notes := done.CPUSeconds, float64(done.Notifications)
	if done.ResyncDueNanos != 0 {
		cpu, notes = done.CPUBeforeResync, float64(len(lat))
	}
	perNote := time.Duration(cpu / max(notes, 1) * float64(time.Second))

	achieved := float64(len(changes)) / elapsed.Seconds()
	fmt.Printf("\nlive holders: %d changes in %s (%.0f a second made, %d asked), %d notifications applied since the last anchor, %d publications\n",
		len(changes), elapsed, achieved, rate, done.Notifications, len(published))
	fmt.Printf("\ndocs/benchmarks.md table (live):\n\n%s\n\n| figure | measured | target |\n|---|---|---|\n", stamp.Line("make bench-holders"))
	fmt.Printf("| anchored (enumeration of %s accounts and the subscription) | %.2f s after start | |\n", stamp.Thousands(float64(before.TokenAccounts)), ready.AnchorSeconds)
	fmt.Printf("| peak RSS of the collector (anchor and stream, before the resync) | %.1f MiB | ≤ 128 MiB: %s |\n",
		done.PeakBeforeResyncMiB, verdict(done.PeakBeforeResyncMiB <= 128))
	fmt.Printf("| peak RSS with a resync (`HOLDERS_RESYNC` %s: the new tally beside the old until compared) | %.1f MiB (%.1f MiB at the end) | |\n",
		resync, done.PeakRSSMiB, done.RSSMiB)
	resyncRow := "none (the resync did not end within the stream)"
	if r := done.Resync; r != nil {
		resyncRow = fmt.Sprintf("live %s, enumerated %s at slot %d: differed", stamp.Thousands(float64(r.Live)), stamp.Thousands(float64(r.Enumerated)), r.Slot)
		if r.Agreed {
			resyncRow = fmt.Sprintf("agreed, %s holders at slot %d", stamp.Thousands(float64(r.Live)), r.Slot)
		}
	}
	fmt.Printf("| the resync's comparison, during the stream | %s | agreed |\n", resyncRow)
	fmt.Printf("| change to published count, %s changes a second, `HOLDERS_PUBLISH_INTERVAL` 1 s (the %s changes before the resync was due) | p50 %s, p99 %s, max %s | p99 ≤ 1 s: %s |\n",
		stamp.Thousands(achieved), stamp.Thousands(float64(len(lat))), pct(lat, 0.5).Round(time.Millisecond), pct(lat, 0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), verdict(pct(lat, 0.99) <= time.Second))
	if len(latResync) > 0 {
		fmt.Printf("| the same, the %s changes from the resync on (its enumeration beside the publications) | p50 %s, p99 %s, max %s | |\n",
			stamp.Thousands(float64(len(latResync))), pct(latResync, 0.5).Round(time.Millisecond), pct(latResync, 0.99).Round(time.Millisecond), latResync[len(latResync)-1].Round(time.Millisecond))
	}
	fmt.Printf("| CPU per notification (decode and apply, publications included; before the resync) | %s | |\n", perNote.Round(100*time.Nanosecond))
	fmt.Printf("| the count at the end | %s holders, %s | |\n", stamp.Thousands(float64(done.Holders)), exact)

	// Bytes a day from the node: scans every 15 minutes (the default)
	// against a resync at the default interval, and every 6 hours (a
	// check of the live count four times a day), plus the notifications.
	scans := 96 * float64(responseBytes)
	def := holders.DefaultConfig().Resync
	fmt.Printf("\nbytes a day read from the node (getProgramAccounts answer %.1f MiB uncompressed; a notification %d bytes):\n", float64(responseBytes)/(1<<20), frame)
	fmt.Printf("| changes a day | scans (`HOLDERS_REFRESH` 15 min) | live (`HOLDERS_RESYNC` %s, the default) | live / scans | live (`HOLDERS_RESYNC` 6 h) | live / scans |\n|---|---|---|---|---|---|\n", hours(def))
	for _, perDay := range []float64{8_640, 86_400, 864_000} {
		notes := perDay * float64(frame)
		liveDef := 24*float64(time.Hour)/float64(def)*float64(responseBytes) + notes
		live6 := 24.0/6*float64(responseBytes) + notes
		fmt.Printf("| %s | %.2f GiB | %.2f GiB | 1/%.0f | %.2f GiB | 1/%.0f |\n", stamp.Thousands(perDay), scans/(1<<30),
			liveDef/(1<<30), scans/liveDef, live6/(1<<30), scans/live6)
	}
	if exact != "exact" {
		return fmt.Errorf("the live count ended at %d holders, the ledger has %d", done.Holders, truth.Holders)
	}
	if done.Resync != nil && !done.Resync.Agreed {
		return fmt.Errorf("the resync differed: live %d, enumerated %d at slot %d", done.Resync.Live, done.Resync.Enumerated, done.Resync.Slot)
	}
	return nil
}

// notificationBytes is the wire size of one programNotification of the
// mint's token accounts (as the collector subscribes: base64, the owner
// and amount sliced), measured
// on a socket of the parent's own over one holder change.
func notificationBytes(sim *solanasim.Server, simURL, mint string) (int, error) {
	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(simURL, "http"), nil)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	req := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "programSubscribe",
		"params": wire.ProgramSubscribeParams(solanasim.ProgramToken.ID(), mint, "processed")}
	if err := conn.WriteJSON(req); err != nil {
		return 0, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := conn.ReadMessage(); err != nil { // the subscription's id
		return 0, err
	}
	ch, err := sim.OpenHolder(mint, 1)
	if err != nil {
		return 0, err
	}
	if _, err := sim.SetHolderBalance(mint, ch.Accounts[0].Address, 0); err != nil {
		return 0, err
	}
	total := 0
	for range 2 {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return 0, err
		}
		total += len(msg)
	}
	return total / 2, nil
}

// hours writes d as "30 h".
func hours(d time.Duration) string { return strconv.FormatFloat(d.Hours(), 'f', -1, 64) + " h" }
