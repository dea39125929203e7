package holders_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tokendata/tokendata/services/holders"
	"github.com/tokendata/tokendata/services/holders/holderstest"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// heapPeak samples the bytes of live heap objects until stop is called,
// and returns the highest value above the baseline at the start.
func heapPeak(t *testing.T) (stop func() uint64) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(peak, base) - base
	}
}

// TestEndlessStreamStopsAtCeiling: a node that lists accounts without end
// (getProgramAccounts streaming until the client hangs up, or DAS pages
// without a last one) meets a ceiling, the account count or the owner
// set's memory: the run fails with enumeration_too_large and its remedy,
// memory stays bounded, and the last good count stays served.
func TestEndlessStreamStopsAtCeiling(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(2000))
	for _, tc := range []struct {
		name, method, route string
		accounts, memory    int64
		variable            string
	}{
		{"gpa/accounts", contract.HoldersMethodGPA, "getProgramAccounts", 100_000, 512 << 20, "HOLDERS_MAX_ACCOUNTS"},
		// The smallest ceiling the setting takes (4 MiB, about 100,000
		// owners): the least streaming and decoding before it.
		{"gpa/memory", contract.HoldersMethodGPA, "getProgramAccounts", 20_000_000, 4 << 20, "HOLDERS_MAX_MEMORY_BYTES"},
		{"das/accounts", contract.HoldersMethodDAS, "getTokenAccounts", 20_000, 512 << 20, "HOLDERS_MAX_ACCOUNTS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := holders.DefaultConfig()
			cfg.MaxAccounts, cfg.MaxMemoryBytes = tc.accounts, tc.memory
			// Only a backstop, so that a run without a ceiling ends: the
			// ceiling must end it first however slow the machine (a
			// minute was not enough for 200,000 owners under -race with
			// the cores taken by the chart lane's builds: the run timed
			// out, 2026-12-01).
			cfg.RPCTimeout = 10 * time.Minute
			f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint, method: tc.method, cfg: cfg})
			if err := f.c.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			good, goodDoc := readHolders(t, f.store)

			s.Faults().Inject(tc.route, fault.Fault{Kind: fault.EndlessStream})
			defer s.Faults().Clear(tc.route)
			peak := heapPeak(t)
			started := time.Now()
			err := f.c.RunOnce(ctx)
			grew := peak()
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != contract.ErrKindTooLarge {
				t.Fatalf("err = %v after %s, want kind %s", err, time.Since(started).Round(time.Millisecond), contract.ErrKindTooLarge)
			}
			if !strings.Contains(ce.Message, tc.variable) || ce.Remedy != holders.RemedyTooLarge {
				t.Errorf("message %q, remedy %q", ce.Message, ce.Remedy)
			}
			// The owner set's ceiling, the decoder's window and the
			// simulator's own buffers: far from an endless stream's growth.
			if limit := uint64(min(tc.memory, 16<<20)) + 48<<20; grew > limit {
				t.Errorf("the heap grew by %d MiB during the run (bound %d MiB)", grew>>20, limit>>20)
			}
			st, err := f.store.ReadStatuses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			run := st[contract.CollectorHolders].Runs[contract.DomainHolders]
			if run.OK || run.ErrorKind != contract.ErrKindTooLarge || run.Remedy != holders.RemedyTooLarge {
				t.Errorf("status run = %+v", run)
			}
			if after, afterDoc := readHolders(t, f.store); after.Holders != good.Holders || !afterDoc.UpdatedAt.Equal(goodDoc.UpdatedAt) {
				t.Errorf("the last good count was replaced: %+v", after)
			}
		})
	}
}

// maxStatusMessage is the runner's bound of a status record's message,
// its "…" mark included.
const maxStatusMessage = 512 + len("…")

// TestHugeNodeMessageCapped: a node whose error message is 8 MiB (on the
// enumeration, on DAS, on the program lookup) gives a status record and
// log lines of bounded size, with the start of its message kept as the
// node's error, in valid UTF-8.
func TestHugeNodeMessageCapped(t *testing.T) {
	s, url := sim(t, holderstest.ClassicToken(500))
	for _, tc := range []struct{ method, route string }{
		{contract.HoldersMethodGPA, "getProgramAccounts"},
		{contract.HoldersMethodGPA, "getAccountInfo"},
		{contract.HoldersMethodDAS, "getTokenAccounts"},
	} {
		t.Run(tc.method+"/"+tc.route, func(t *testing.T) {
			ctx := context.Background()
			f := newCollector(t, setup{url: url, mint: holderstest.ClassicMint, method: tc.method})
			s.Faults().Inject(tc.route, fault.Fault{Kind: fault.HugeError})
			defer s.Faults().Clear(tc.route)
			err := f.c.RunOnce(ctx)
			var ce *collector.Error
			if !errors.As(err, &ce) || ce.Kind != contract.ErrKindRPC {
				t.Fatalf("err = %v, want the node's error (%s)", err, contract.ErrKindRPC)
			}
			st, err := f.store.ReadStatuses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			run := st[contract.CollectorHolders].Runs[contract.DomainHolders]
			if len(run.Error) > maxStatusMessage || !utf8.ValidString(run.Error) || !strings.Contains(run.Error, "Internal error: nœud") {
				t.Errorf("status message of %d bytes: %.120q", len(run.Error), run.Error)
			}
			raw, _ := json.Marshal(st[contract.CollectorHolders])
			if len(raw) > 4<<10 {
				t.Errorf("status record of %d bytes", len(raw))
			}
			for line := range strings.SplitSeq(strings.TrimSpace(f.logs.String()), "\n") {
				if len(line) > 2<<10 || !utf8.ValidString(line) {
					t.Errorf("log line of %d bytes: %.200s", len(line), line)
				}
			}
		})
	}
}
