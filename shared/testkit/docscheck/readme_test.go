package docscheck

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// readmeLimit is the most characters the front page may hold: what the
// service is, the two commands, serving a token, Kubernetes, the endpoint
// table and the map of the docs. The reference lives in docs/.
const readmeLimit = 15000

// TestReadmeIsShort: README.md stays a page a newcomer reads in minutes.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCount(b); n > readmeLimit {
		t.Errorf("README.md holds %d characters, more than %d: move the detail to the page of docs/ it belongs to and link it", n, readmeLimit)
	} else {
		t.Logf("README.md: %d characters (limit %d)", n, readmeLimit)
	}
}
