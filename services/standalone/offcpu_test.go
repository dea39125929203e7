package standalone_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The recovery bounds of the fault matrix are the product's own waits
// (intervals, polls, a retry's back-off) plus edgeLag, the edge's renders
// under -race. make test runs this package at nice 5 beside a local
// cluster whose daemons run at nice -10: while a drain or the HPA's load
// keeps them busy, this process gets a few per cent of the cores, and a
// recovery that took 4.4 s beside the tools' build took 18 s in CI (the
// Redis row, 2026-12-02), the running edge still stale 14 s after that.
// That time is the machine's, not the product's, and the kernel counts
// it: each thread's time spent runnable, waiting for a core (the second
// field of /proc/self/task/*/schedstat). A window stretches its bound by
// the time its process was kept waiting, so that a bound fails a product
// that waits too long, not a machine that was busy.

// window is a span of wall time from its opening, with the time this
// process was kept from the cores during it.
type window struct {
	from time.Time
	mu   sync.Mutex
	at   time.Time // the last reading
	last threadTimes
	off  time.Duration // kept from the cores up to it
	err  error
	stop func() // ends the readings (close)
}

// threadTimes is the time this process's threads ran on a core and the
// time they waited, runnable, for one, each summed over the threads.
type threadTimes struct{ ran, waited time.Duration }

// sampleEvery is how often a window reads the threads' times. Between two
// readings dt apart, the threads ran r and waited w in all: the process
// lost w when it had less than one thread runnable on average (r + w <
// dt: its waits did not overlap), and otherwise the share w / (r + w) of
// dt, as a chain of work handed from thread to thread does. So a process
// idle between two readings (a collector's interval, a poll's back-off)
// loses nothing, and one that wants more than it gets loses what it did
// not get.
const sampleEvery = 100 * time.Millisecond

// openWindow starts a window now; it reads until close or the test's end.
func openWindow(t testing.TB) *window {
	t.Helper()
	last, err := readThreadTimes()
	if err != nil {
		t.Fatal(err)
	}
	w := &window{from: time.Now(), last: last}
	w.at = w.from
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				w.read()
			}
		}
	}()
	w.stop = sync.OnceFunc(func() { close(stop); <-done })
	t.Cleanup(w.stop)
	return w
}

// close ends the window's readings: a wait that is over closes its own,
// so that a test that waits many times does not keep them all reading.
func (w *window) close() { w.stop() }

// read takes a reading and adds what the process lost since the last.
func (w *window) read() {
	w.mu.Lock()
	defer w.mu.Unlock()
	tt, err := readThreadTimes()
	if err != nil {
		w.err = err
		return
	}
	now := time.Now()
	dt, r, wt := now.Sub(w.at), tt.ran-w.last.ran, tt.waited-w.last.waited
	if wt > 0 && r >= 0 {
		if r+wt <= dt {
			w.off += wt
		} else {
			w.off += time.Duration(float64(dt) * float64(wt) / float64(r+wt))
		}
	}
	w.at, w.last = now, tt
}

// offCPU is the time this process was kept from the cores since the
// window opened, up to now.
func (w *window) offCPU(t testing.TB) time.Duration {
	t.Helper()
	w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.off
}

// past reports whether the window has lasted longer than bound plus the
// time its process was kept from the cores; it also returns that time.
func (w *window) past(t testing.TB, bound time.Duration) (bool, time.Duration) {
	t.Helper()
	off := w.offCPU(t)
	return time.Since(w.from) > bound+off, off
}

// readThreadTimes sums the times of this process's threads (schedstat,
// in ns). A thread that ended takes its times with it; Go keeps its
// threads, so the sums only grow here, and a reading where they fell
// counts no loss.
func readThreadTimes() (threadTimes, error) {
	tasks, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil {
		return threadTimes{}, fmt.Errorf("reading the threads' schedstat: %w", err)
	}
	if len(tasks) == 0 {
		return threadTimes{}, errors.New("no thread's schedstat in /proc/self/task (a kernel without CONFIG_SCHED_INFO)")
	}
	var sum threadTimes
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended meanwhile
		}
		var ran, waited, slices int64
		if _, err := fmt.Sscan(string(b), &ran, &waited, &slices); err != nil {
			return threadTimes{}, fmt.Errorf("%s: %q: %w", f, b, err)
		}
		sum.ran += time.Duration(ran)
		sum.waited += time.Duration(waited)
	}
	return sum, nil
}
