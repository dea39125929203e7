// Package redistest starts a real redis-server for tests, on a free
// loopback port, and stops it when the test ends; or a Redis Cluster of
// six (StartCluster), or a master, a replica and three sentinels
// (StartSentinel). Any module's tests can use it. redis-server and
// redis-cli must be on PATH: `make test` installs them through
// hack/install-test-deps.sh; a test never skips for their absence.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// Server is one redis-server process owned by a test.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	// password, when set, is the server's requirepass.
	password string
	// lead goes before the flags (a config file, --sentinel); extra
	// after them (cluster mode).
	lead, extra []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start runs redis-server on 127.0.0.1 at a free port, without
// persistence, and registers its stop with tb.Cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, "")
}

// StartWithPassword is Start with a server that requires password
// (requirepass): URL carries it, Addr alone is refused with NOAUTH.
func StartWithPassword(tb testing.TB, password string) *Server {
	tb.Helper()
	return start(tb, password)
}

func start(tb testing.TB, password string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed: run `make test` (or hack/install-test-deps.sh) to install it: %v", err)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freeport.Port(tb), password: password}
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the redis:// URL of the server, with its password if it has one.
func (s *Server) URL() string {
	if s.password != "" {
		return (&url.URL{Scheme: "redis", User: url.UserPassword("", s.password), Host: s.Addr()}).String()
	}
	return "redis://" + s.Addr()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	args := append(append([]string(nil), s.lead...),
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		// a replica's first sync at once, not after the default 5 s
		"--repl-diskless-sync-delay", "0",
		"--protected-mode", "yes", "--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	)
	args = append(args, s.extra...)
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pid, err := ping(s.Addr(), s.password)
		if err == nil && pid == cmd.Process.Pid {
			return nil
		}
		if err == nil {
			// Another process's server holds the port (ours could not
			// bind it): never hand a test someone else's data.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			s.cmd = nil
			return fmt.Errorf("redis-server on %s: the port is held by another redis-server (pid %d)", s.Addr(), pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	s.cmd = nil
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return fmt.Errorf("redis-server on %s did not answer within 10s; log:\n%s", s.Addr(), log)
}

// Stop kills the server (its data is lost). Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Freeze stops the server's process (SIGSTOP) without closing anything:
// its port still takes connections and commands, and nothing answers
// them, as a Redis that hangs or an address whose pod is gone. Thaw
// (SIGCONT) lets it answer again; Stop ends it frozen or not.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw lets a frozen server run again.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.tb.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatal(err)
	}
}

// Restart stops the server and starts an empty one on the same port.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// Resume starts a stopped server again on the same port.
func (s *Server) Resume() {
	s.tb.Helper()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// ping speaks just enough RESP to know the server is up (authenticating
// first when it has a password) and returns its process id.
func ping(addr, password string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	r := bufio.NewReader(c)
	if password != "" {
		cmd := fmt.Sprintf("*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password)
		if err := roundTrip(c, r, cmd, "+OK\r\n"); err != nil {
			return 0, err
		}
	}
	if err := roundTrip(c, r, "PING\r\n", "+PONG\r\n"); err != nil {
		return 0, err
	}
	// INFO server is one bulk string holding "process_id:<pid>".
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO: unexpected reply %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server without process_id")
}

// roundTrip sends cmd and expects the reply line want.
func roundTrip(c net.Conn, r *bufio.Reader, cmd, want string) error {
	if _, err := c.Write([]byte(cmd)); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != want {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}
