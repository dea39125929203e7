//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package edge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tokendata/tokendata/services/edge/view"
)

// TestDurationCountsTheWaitInTheSocket: an answer's duration (the
// histogram behind TokendataEdgeLatencyHigh, the access log) runs from
// the arrival of its request on the host, not from the handler's clock,
// so that the time a request waited in its socket while the edge had no
// CPU counts. A request written to a connection nothing accepts yet
// waits there a second; once the server runs, its answer is observed at
// a second or more. The next request of that connection, sent after the
// client idled another second, is observed at its own time: under a
// second, where the first request's arrival would give two.
func TestDurationCountsTheWaitInTheSocket(t *testing.T) {
	stampsOn(t)
	h := newHarness(t, nil)
	h.writeAll()
	h.refresh()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := h.srv.apiServer(ln) // its listener asks for the timestamps
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	const wait = time.Second
	br := bufio.NewReader(c)
	ask := func() {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+view.PathHealth+" HTTP/1.1\r\nHost: edge\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", view.PathHealth, resp.StatusCode)
		}
	}

	ask()
	time.Sleep(wait) // the request waits in the socket: nothing accepts it
	runPublic(t, s)
	answer()
	n, first := h.durations(view.PathHealth)
	if n != 1 || first < wait.Seconds() {
		t.Fatalf("the request that waited %s in its socket: %d observations summing to %.3f s, want 1 of at least %.3f s", wait, n, first, wait.Seconds())
	}

	time.Sleep(wait) // the client idles
	ask()
	answer()
	n, sum := h.durations(view.PathHealth)
	if second := sum - first; n != 2 || second >= wait.Seconds() {
		t.Errorf("the next request of the connection: %d observations, the second %.3f s, want 2, the second under %.3f s (the first request's arrival gives %.3f s or more)",
			n, second, wait.Seconds(), 2*wait.Seconds())
	}
}

// durations is the count and the sum of the GET answers of route in the
// edge's request duration histogram.
func (h *harness) durations(route string) (uint64, float64) {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tokendata_edge_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["method"] == http.MethodGet {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0, 0
}

// stampsOn keeps a socket of the host asking for receive timestamps
// until the test ends, and returns once the kernel stamps packets (it
// turns that on a moment after the first socket asks): a loopback UDP
// socket sends itself datagrams until one arrives stamped.
func stampsOn(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 8), make([]byte, 128)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if err := unix.Sendto(fd, []byte("stamp"), 0, self); err != nil {
			t.Fatal(err)
		}
		_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS {
				return
			}
		}
	}
	t.Fatal("the kernel stamped no packet within 10 s of a socket asking (SO_TIMESTAMPNS)")
}
