package redistest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tokendata/tokendata/shared/testkit/redistest"
)

// TestClusterFailover: the cluster starts healthy, and when the master of
// a key is killed its replica takes the slots over.
func TestClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t)
	if !strings.Contains(c.URL(), "addr=") || len(c.Addrs()) != 6 {
		t.Fatalf("URL %s, addrs %v", c.URL(), c.Addrs())
	}
	old := c.MasterOf("k")
	c.Kill(old)
	took := c.WaitHealthy(30 * time.Second)
	if now := c.MasterOf("k"); now == old {
		t.Fatalf("%s still the master of k", now)
	}
	t.Logf("failover in %s", took)
}

// TestSentinelFailover: the sentinels promote the replica when the
// master is killed.
func TestSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	old := s.KillMaster()
	took, now := s.WaitFailover(old, 30*time.Second)
	if now == old {
		t.Fatal("no new master")
	}
	t.Logf("failover to %s in %s", now, took)
}
