// Package sigcheck verifies live signed answers with an implementation
// of RFC 9421 that this project did not write: npm's
// http-message-signatures, run by Node from hack/sigcheck. A Go test
// hands it URLs; Node fetches each answer and the published keys itself,
// so nothing of ours stands between the wire and the check.
//
// Node and hack/sigcheck/node_modules must be present: `make test` (or
// hack/install-test-deps.sh) installs them; a test never skips for
// their absence.
package sigcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Mutations a case can apply to what it fetched before verifying.
const (
	// MutateBody flips one bit of one byte of the body.
	MutateBody = "body"
	// MutateKey replaces the published keys by a key that signed nothing.
	MutateKey = "key"
)

// MutateHeader changes one byte of the named field's value.
func MutateHeader(name string) string { return "header:" + name }

// Case is one answer to fetch and verify.
type Case struct {
	URL     string `json:"url"`
	KeysURL string `json:"keys_url"`
	// Encoding is sent as Accept-Encoding and must come back as the
	// answer's Content-Encoding: identity (default), gzip or br.
	Encoding string `json:"encoding,omitempty"`
	// Method is GET (default) or HEAD; a HEAD answer's digest is not
	// checked, having no body.
	Method string `json:"method,omitempty"`
	Mutate string `json:"mutate,omitempty"`
	// Label is the signature label, tokendata by default.
	Label string `json:"label,omitempty"`
}

func (c Case) String() string {
	s := fmt.Sprintf("%s %s (%s)", c.method(), c.URL, c.encoding())
	if c.Mutate != "" {
		s += " mutated " + c.Mutate
	}
	return s
}

func (c Case) method() string {
	if c.Method == "" {
		return "GET"
	}
	return c.Method
}

func (c Case) encoding() string {
	if c.Encoding == "" {
		return "identity"
	}
	return c.Encoding
}

// Result is the verdict of the outside implementation on one case.
type Result struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
	KeyID  string `json:"keyid"`
}

// Dir is hack/sigcheck of the repository holding the working directory.
func Dir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "hack", "sigcheck")
		if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
			return p
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("hack/sigcheck not found above %s", wd)
		}
	}
}

// Run verifies every case in one Node process and returns the results in
// the order of cases.
func Run(tb testing.TB, cases []Case) []Result {
	tb.Helper()
	dir := Dir(tb)
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatalf("node is not installed: run `make deps` (hack/install-test-deps.sh) to install it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "http-message-signatures", "package.json")); err != nil {
		tb.Fatalf("hack/sigcheck's packages are not installed: run `make deps` (hack/install-test-deps.sh runs npm ci there): %v", err)
	}
	in, err := json.Marshal(struct {
		Cases []Case `json:"cases"`
	}{cases})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "verify.js"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("node verify.js: %v\n%s", err, stderr.String())
	}
	var out struct {
		Results []Result `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		tb.Fatalf("node verify.js wrote %q: %v", stdout.String(), err)
	}
	if len(out.Results) != len(cases) {
		tb.Fatalf("node verify.js gave %d results for %d cases", len(out.Results), len(cases))
	}
	return out.Results
}

// Expect runs the cases, each unmutated one expected to verify and each
// mutated one expected to fail, and reports every case that does not.
func Expect(tb testing.TB, cases []Case) []Result {
	tb.Helper()
	res := Run(tb, cases)
	for i, c := range cases {
		switch {
		case c.Mutate == "" && !res[i].OK:
			tb.Errorf("%s: the outside verifier refused it: %s", c, res[i].Reason)
		case c.Mutate != "" && res[i].OK:
			tb.Errorf("%s: the outside verifier accepted it", c)
		}
	}
	return res
}
