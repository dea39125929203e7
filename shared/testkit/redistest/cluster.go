package redistest

import (
	"bufio"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/testkit/freeport"
)

// NodeTimeout is the cluster-node-timeout of a Cluster: a master that
// does not answer for this long is failed over to its replica.
const NodeTimeout = 2 * time.Second

// Cluster is a Redis Cluster of six redis-server processes in cluster mode
// on loopback (three masters, each with one replica), owned by a test.
type Cluster struct {
	tb    testing.TB
	nodes []*Server
}

// StartCluster starts six redis-server in cluster mode on free loopback
// ports, joins them with `redis-cli --cluster create --cluster-replicas
// 1`, waits until every node says cluster_state:ok and every replica is in
// sync, and registers their stop with tb.Cleanup.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed: run `make test` (or hack/install-test-deps.sh) to install it: %v", err)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Fatalf("redis-cli is not installed: run `make test` (or hack/install-test-deps.sh) to install it: %v", err)
	}
	c := &Cluster{tb: tb}
	for range 6 {
		s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: freeport.Port(tb)}
		// The bus port is named: the default (port + 10000) may be taken
		// or above 65535.
		s.extra = []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(freeport.Port(tb)),
			"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout / time.Millisecond)),
			"--cluster-config-file", "nodes.conf"}
		if err := s.start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Stop)
		c.nodes = append(c.nodes, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitHealthy(30 * time.Second)
	return c
}

// Addrs are host:port of the six nodes, in start order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// URL is the cluster form of REDIS_URL: redis://first?addr=second&….
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	q := url.Values{}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	return (&url.URL{Scheme: "redis", Host: addrs[0], RawQuery: q.Encode()}).String()
}

// node returns the server listening on addr.
func (c *Cluster) node(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.tb.Fatalf("no node of the cluster listens on %s", addr)
	return nil
}

// alive returns the nodes still running.
func (c *Cluster) alive() []*Server {
	var out []*Server
	for _, n := range c.nodes {
		n.mu.Lock()
		if n.cmd != nil {
			out = append(out, n)
		}
		n.mu.Unlock()
	}
	return out
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	addr     string
	master   bool
	failed   bool
	masterOf string // for a replica, its master's id
	id       string
	slots    []string
}

// nodes reads CLUSTER NODES from the node at addr.
func (c *Cluster) nodesSeenBy(addr string) ([]clusterNode, error) {
	out, err := Cli(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		a, _, _ := strings.Cut(f[1], "@")
		flags := strings.Split(f[2], ",")
		n := clusterNode{id: f[0], addr: a, master: slices.Contains(flags, "master"),
			failed: slices.Contains(flags, "fail") || slices.Contains(flags, "fail?"), slots: f[8:]}
		if !n.master {
			n.masterOf = f[3]
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// MasterOf is the address of the master that holds key's slot, as the
// first live node sees it.
func (c *Cluster) MasterOf(key string) string {
	c.tb.Helper()
	live := c.alive()
	if len(live) == 0 {
		c.tb.Fatal("no node of the cluster is running")
	}
	out, err := Cli(live[0].Addr(), "CLUSTER", "KEYSLOT", key)
	if err != nil {
		c.tb.Fatal(err)
	}
	slot, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		c.tb.Fatalf("CLUSTER KEYSLOT %s: %q", key, out)
	}
	nodes, err := c.nodesSeenBy(live[0].Addr())
	if err != nil {
		c.tb.Fatal(err)
	}
	for _, n := range nodes {
		if n.master && !n.failed && holdsSlot(n.slots, slot) {
			return n.addr
		}
	}
	c.tb.Fatalf("no master holds slot %d", slot)
	return ""
}

func holdsSlot(ranges []string, slot int) bool {
	for _, r := range ranges {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// Kill stops the node at addr with SIGKILL, as a crash or an OOM kill.
func (c *Cluster) Kill(addr string) {
	c.tb.Helper()
	c.node(addr).Stop()
}

// WaitHealthy waits up to d until every live node says cluster_state:ok,
// every slot has a master no node considers failed, and every live
// replica is in sync; it returns how long that took.
func (c *Cluster) WaitHealthy(d time.Duration) time.Duration {
	c.tb.Helper()
	return c.waitHealthy(d)
}

func (c *Cluster) waitHealthy(d time.Duration) time.Duration {
	start := time.Now()
	var last string
	for time.Since(start) < d {
		if last = c.unhealthy(); last == "" {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("the cluster is not healthy after %s: %s", d, last)
	return 0
}

// unhealthy says what is not yet right, or "".
func (c *Cluster) unhealthy() string {
	for _, n := range c.alive() {
		info, err := Cli(n.Addr(), "CLUSTER", "INFO")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return n.Addr() + " is not cluster_state:ok"
		}
		nodes, err := c.nodesSeenBy(n.Addr())
		if err != nil {
			return err.Error()
		}
		covered := 0
		for _, m := range nodes {
			if m.master && len(m.slots) > 0 {
				if m.failed {
					return fmt.Sprintf("%s sees master %s failed", n.Addr(), m.addr)
				}
				covered++
			}
		}
		if covered != 3 {
			return fmt.Sprintf("%s sees %d masters with slots", n.Addr(), covered)
		}
		repl, err := Cli(n.Addr(), "INFO", "replication")
		if err != nil {
			return err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return n.Addr() + " is a replica out of sync"
		}
	}
	return ""
}

// FlushAll empties every master (replicas follow).
func (c *Cluster) FlushAll() {
	c.tb.Helper()
	for _, n := range c.alive() {
		role, err := Cli(n.Addr(), "ROLE")
		if err != nil {
			c.tb.Fatal(err)
		}
		if strings.HasPrefix(role, "master") {
			if _, err := Cli(n.Addr(), "FLUSHALL"); err != nil {
				c.tb.Fatal(err)
			}
		}
	}
}

// Cli runs redis-cli against addr (host:port) and returns its output; a
// Redis error reply is an error.
func Cli(addr string, args ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.Output()
	s := string(out)
	if err != nil {
		return s, fmt.Errorf("redis-cli -p %s %s: %w", port, strings.Join(args, " "), err)
	}
	if strings.HasPrefix(s, "ERR") || strings.HasPrefix(s, "(error)") {
		return s, fmt.Errorf("redis-cli -p %s %s: %s", port, strings.Join(args, " "), strings.TrimSpace(s))
	}
	return s, nil
}
