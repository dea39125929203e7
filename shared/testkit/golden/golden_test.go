package golden

import (
	"os"
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "a.golden"), []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Check(r, "a", []byte("same"), false)
	if r.failed {
		t.Error("equal bytes reported as different")
	}
	Check(r, "a", []byte("other"), false)
	if !r.failed {
		t.Error("a difference passed")
	}

	r = &recorder{TB: t}
	Check(r, "sub/b", []byte("new"), true)
	if r.failed {
		t.Error("an update reported a difference")
	}
	b, err := os.ReadFile(filepath.Join("testdata", "sub", "b.golden"))
	if err != nil || string(b) != "new" {
		t.Errorf("update wrote %q, %v; want \"new\"", b, err)
	}
	Check(r, "sub/b", []byte("new"), false)
	if r.failed {
		t.Error("the rewritten file does not match")
	}
}
