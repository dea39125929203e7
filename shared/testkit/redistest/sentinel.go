package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// SentinelMaster is the master name the sentinels of StartSentinel watch.
const SentinelMaster = "tokendata"

// SentinelDownAfter is how long the sentinels wait for a silent master
// before they agree it is down and fail over.
const SentinelDownAfter = time.Second

// Sentinel is a master, one replica and three sentinels (quorum 2) on
// loopback, owned by a test.
type Sentinel struct {
	tb        testing.TB
	data      []*Server // the master first, then the replica
	sentinels []*Server
}

// StartSentinel starts a master, its replica and three sentinels that
// watch it, waits until the replica is in sync and every sentinel knows
// the replica and the other sentinels, and registers their stop with
// tb.Cleanup.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed: run `make test` (or hack/install-test-deps.sh) to install it: %v", err)
	}
	s := &Sentinel{tb: tb}
	master := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freeport.Port(tb)}
	replica := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freeport.Port(tb)}
	replica.extra = []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}
	for _, n := range []*Server{master, replica} {
		if err := n.start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(n.Stop)
		s.data = append(s.data, n)
	}
	for range 3 {
		n := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freeport.Port(tb)}
		// A sentinel rewrites its configuration file: it must be its own.
		conf := filepath.Join(n.dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s %[3]d\n"+
			"sentinel failover-timeout %[1]s 10000\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			SentinelMaster, master.port, SentinelDownAfter.Milliseconds())
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
		n.lead = []string{conf, "--sentinel"}
		if err := n.start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(n.Stop)
		s.sentinels = append(s.sentinels, n)
	}
	s.waitReady(30 * time.Second)
	return s
}

// URL is the Sentinel form of REDIS_URL.
func (s *Sentinel) URL() string {
	addrs := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		addrs[i] = n.Addr()
	}
	return "redis-sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// MasterAddr is the master's address as the first sentinel names it.
func (s *Sentinel) MasterAddr() string {
	s.tb.Helper()
	a, err := s.masterSeenBy(s.sentinels[0])
	if err != nil {
		s.tb.Fatal(err)
	}
	return a
}

func (s *Sentinel) masterSeenBy(sentinel *Server) (string, error) {
	out, err := Cli(sentinel.Addr(), "SENTINEL", "get-master-addr-by-name", SentinelMaster)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", fmt.Errorf("sentinel %s names no master: %q", sentinel.Addr(), out)
	}
	return net.JoinHostPort(f[0], f[1]), nil
}

// KillMaster stops the master with SIGKILL and returns its address.
func (s *Sentinel) KillMaster() string {
	s.tb.Helper()
	addr := s.MasterAddr()
	for _, n := range s.data {
		if n.Addr() == addr {
			n.Stop()
			return addr
		}
	}
	s.tb.Fatalf("the master %s is none of the test's servers", addr)
	return ""
}

// WaitFailover waits up to d until every sentinel names a master other
// than old and that server says it is a master; it returns how long that
// took and the new master's address.
func (s *Sentinel) WaitFailover(old string, d time.Duration) (time.Duration, string) {
	s.tb.Helper()
	start := time.Now()
	for time.Since(start) < d {
		if addr, ok := s.agreedMaster(); ok && addr != old {
			if role, err := Cli(addr, "ROLE"); err == nil && strings.HasPrefix(role, "master") {
				return time.Since(start), addr
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tb.Fatalf("no sentinel failover from %s within %s", old, d)
	return 0, ""
}

// agreedMaster returns the master every sentinel names, if they agree.
func (s *Sentinel) agreedMaster() (string, bool) {
	var addr string
	for _, n := range s.sentinels {
		a, err := s.masterSeenBy(n)
		if err != nil || (addr != "" && a != addr) {
			return "", false
		}
		addr = a
	}
	return addr, true
}

// waitReady waits until the replica is in sync and every sentinel sees
// the replica and the two other sentinels (a failover needs both).
func (s *Sentinel) waitReady(d time.Duration) {
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		if last = s.notReady(); last == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("the sentinel setup is not ready after %s: %s", d, last)
}

func (s *Sentinel) notReady() string {
	repl, err := Cli(s.data[1].Addr(), "INFO", "replication")
	if err != nil {
		return err.Error()
	}
	if !strings.Contains(repl, "master_link_status:up") {
		return "the replica is not in sync"
	}
	for _, n := range s.sentinels {
		out, err := Cli(n.Addr(), "SENTINEL", "master", SentinelMaster)
		if err != nil {
			return err.Error()
		}
		f := strings.Fields(out) // alternating field names and values
		v := map[string]string{}
		for i := 0; i+1 < len(f); i += 2 {
			v[f[i]] = f[i+1]
		}
		if v["num-slaves"] != "1" || v["num-other-sentinels"] != "2" {
			return fmt.Sprintf("sentinel %s sees %s replicas and %s other sentinels", n.Addr(), v["num-slaves"], v["num-other-sentinels"])
		}
	}
	return ""
}
