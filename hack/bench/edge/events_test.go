package main

import (
	"bufio"
	"bytes"
	"math"
	"net/http/httputil"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain runs the servers the bench starts from its own binary: a test
// that runs the bench starts them from the test binary.
func TestMain(m *testing.M) {
	if child(os.Args[1:]) {
		return
	}
	os.Exit(m.Run())
}

// TestEventsBench runs make bench-events small (200 subscribers, 3
// changes, the edge row for a second per run when wrk is installed): it
// proves the run works end to end, and judges no figure.
func TestEventsBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and two edges")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make deps)")
	}
	o := eventsOptions{subscribers: 200, changes: 3, maxConns: 400, maxStreams: 300, wrkDuration: time.Second, wrkConns: 8,
		connectTimeout: 30 * time.Second, waitEvent: 10 * time.Second}
	if _, err := exec.LookPath("wrk"); err == nil {
		o.rounds = 1
	} else {
		t.Log("wrk is not installed: no edge row")
	}
	var out bytes.Buffer
	rep, err := runEvents(o, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.missed != 0 || len(rep.lat) != o.subscribers*o.changes || len(rep.last) != o.changes {
		t.Errorf("%d latencies, %d per change, %d missed: want %d, %d, 0", len(rep.lat), len(rep.last), rep.missed, o.subscribers*o.changes, o.changes)
	}
	for _, l := range rep.lat {
		if l <= 0 || math.IsNaN(l) {
			t.Fatalf("latency %v ms: a price event before its write", l)
		}
	}
	// each change is a price and a market event to every subscriber
	if rep.delivered < float64(2*o.subscribers*o.changes) {
		t.Errorf("the edge delivered %.0f events, want at least %d", rep.delivered, 2*o.subscribers*o.changes)
	}
	// event_fanout_seconds: the events each change delivered, not the
	// first events of a new stream
	if rep.fanoutFirst != 0 || rep.fanoutChanges != rep.delivered {
		t.Errorf("event_fanout_seconds counted %.0f while the subscribers connected (want 0), %.0f over the changes (want %.0f)",
			rep.fanoutFirst, rep.fanoutChanges, rep.delivered)
	}
	if rep.rssBefore <= 0 || rep.rssWith <= 0 {
		t.Errorf("RSS before %.1f MiB, with %.1f MiB", rep.rssBefore, rep.rssWith)
	}
	if o.rounds > 0 && len(rep.rows) != len(paths) {
		t.Errorf("%d edge rows, want %d", len(rep.rows), len(paths))
	}
	for _, s := range []string{"per subscriber:", "CPU per delivered event:", "target 200 subscribers within 256 MiB", "| 200 |"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report lacks %q", s)
		}
	}
}

// TestFleetRead: a subscriber parses the chunked stream as EventSource
// does, a body longer than its buffer and CRLF included, and records the
// price events of the changes only.
func TestFleetRead(t *testing.T) {
	market := `{"price_usd":0.00001236,"pairs":"` + strings.Repeat("x", 9000) + `"}`
	stream := "retry: 2000\n\n" +
		"id: 1\nevent: price\ndata: {\"mint\":\"m\",\"price_usd\":0.00001234,\"pair\":{\"price_usd\":1}}\n\n" +
		": heartbeat\n\n" +
		"id: 2\r\nevent: market\r\ndata: " + market + "\r\n\r\n" +
		"id: 3\nevent: price\ndata: {\"mint\":\"m\",\"price_usd\":0.00001235}\n\n"
	var chunked bytes.Buffer
	for s := stream; s != ""; {
		n := min(len(s), 1000)
		chunked.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n" + s[:n] + "\r\n")
		s = s[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	f := newFleet("", 1, []float64{0.00001235, 0.00001236}, time.Now())
	f.read(0, httputil.NewChunkedReader(bufio.NewReader(&chunked)))
	if f.events.Load() != 3 || f.ready.Load() != 1 {
		t.Errorf("%d events, %d ready: want 3, 1", f.events.Load(), f.ready.Load())
	}
	if f.got[0].Load() != 1 || f.recv[0][0].Load() == 0 {
		t.Error("the price event of change 0 was not recorded")
	}
	if f.got[1].Load() != 0 {
		t.Error("a market event's price counted as a price event")
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0.5: 5, 0.99: 10, 1: 10, 0.1: 1} {
		if got := quantile(v, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if !math.IsNaN(quantile(nil, .5)) {
		t.Error("quantile of nothing: want NaN")
	}
}
