package check

import (
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/config"
)

// TestReport: each item under its group, the remedy of a failure or a
// warning under it, the paste block, the verdict; no secret anywhere.
func TestReport(t *testing.T) {
	key := config.Secret("https://rpc.example/?api-key=s3cr3t-k3y-42")
	r := &Report{Title: "tokendata x check", Redactor: config.NewRedactor(key)}
	g := r.Group("supply", "/api/supply")
	g.OK("getTokenSupply", "total %d", 5)
	g.Warn("mint authority", "set", "nothing to do")
	if r.Failed() {
		t.Fatal("failed without a failure")
	}
	r.Group("holders", "").Fail("getProgramAccounts", "refused by "+key.Reveal()+"\nwith a line break", "use another node")
	r.Group("supply", "").Skip("metadata", "not probed")
	r.Paste = "official_pairs:\n  - {address: A}\n"
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := `tokendata x check

supply (/api/supply)
  ok    getTokenSupply: total 5
  warn  mint authority: set
        remedy: nothing to do
  skip  metadata: not probed

holders
  FAIL  getProgramAccounts: refused by [redacted] with a line break
        remedy: use another node

official_pairs:
  - {address: A}

verdict: NOT READY: 1 failed, 1 warnings, 1 passed; fix each FAIL above (its remedy says how), then run check again
`
	if b.String() != want || !r.Failed() {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
