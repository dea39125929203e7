// Command gen writes the environment variable reference
// (docs/environment.md) that package envdoc renders: go generate in
// services/standalone/envdoc, or make docs.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tokendata/tokendata/services/standalone/envdoc"
)

func main() {
	out := flag.String("o", "", "file to write (required)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o is required")
		os.Exit(2)
	}
	if err := os.WriteFile(*out, envdoc.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
