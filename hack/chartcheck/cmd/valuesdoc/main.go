// Command valuesdoc writes docs/chart-values.md, the chart's values
// reference, from charts/tokendata/values.yaml (make docs).
//
//	valuesdoc [-check]
//
// With -check it writes nothing and fails when the page differs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokendata/tokendata/hack/chartcheck"
)

func main() {
	check := flag.Bool("check", false, "fail when docs/chart-values.md differs, write nothing")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "valuesdoc:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	root, err := chartcheck.RepoRoot()
	if err != nil {
		return err
	}
	values, err := os.ReadFile(filepath.Join(root, "charts", "tokendata", "values.yaml"))
	if err != nil {
		return err
	}
	doc, err := chartcheck.ValuesDoc(values)
	if err != nil {
		return err
	}
	page := filepath.Join(root, "docs", "chart-values.md")
	if check {
		old, err := os.ReadFile(page)
		if err != nil || !bytes.Equal(old, []byte(doc)) {
			return fmt.Errorf("%s differs from charts/tokendata/values.yaml: run make docs", page)
		}
		return nil
	}
	return os.WriteFile(page, []byte(doc), 0o644)
}
