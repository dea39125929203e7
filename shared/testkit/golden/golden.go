// Package golden compares test output with files under testdata/, the way
// every public body and document of this project is pinned: a difference
// fails the test, and an update run rewrites the files on purpose.
//
// The package registers no flag. A test package that uses it declares its
// own in a _test.go file and passes its value to Check:
//
//	var update = flag.Bool("update", false, "rewrite testdata/*.golden")
//
//	golden.Check(t, "name", got, *update)
//
// so that `go test -update` in that package's directory rewrites its files.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with testdata/<name>.golden, or rewrites the file
// when update is true.
func Check(tb testing.TB, name string, got []byte, update bool) {
	tb.Helper()
	path := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
