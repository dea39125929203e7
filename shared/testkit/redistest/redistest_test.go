package redistest

import (
	"strings"
	"testing"
)

// TestPortHeldByAnotherServer: a server started on a port another
// redis-server already holds is refused, never handed the other's data.
func TestPortHeldByAnotherServer(t *testing.T) {
	first := Start(t)
	second := &Server{tb: t, bin: first.bin, dir: t.TempDir(), port: first.port}
	err := second.start()
	if err == nil {
		second.Stop()
		t.Fatal("a second server on a held port was accepted")
	}
	if !strings.Contains(err.Error(), "held by another redis-server") {
		t.Fatalf("error: %v", err)
	}
	if pid, err := ping(first.Addr(), ""); err != nil || pid != first.cmd.Process.Pid {
		t.Fatalf("the first server: pid %d, %v", pid, err)
	}
}

// TestStartWithPassword: the server answers with its password, and its
// process id is the one started.
func TestStartWithPassword(t *testing.T) {
	s := StartWithPassword(t, "s3cret")
	if _, err := ping(s.Addr(), ""); err == nil {
		t.Fatal("answered without the password")
	}
	if pid, err := ping(s.Addr(), "s3cret"); err != nil || pid != s.cmd.Process.Pid {
		t.Fatalf("pid %d, %v", pid, err)
	}
}
