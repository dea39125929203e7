// Command dashboards writes the chart's Grafana dashboards
// (charts/tokendata/files/dashboards/*.json) from their Go source, the
// package hack/chartcheck/dashboards: make dashboards runs it from
// hack/chartcheck. A dashboard file that is no longer built is removed.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokendata/tokendata/hack/chartcheck/dashboards"
)

func main() {
	if err := run(filepath.Join("..", "..", "charts", "tokendata", "files", "dashboards")); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := dashboards.All()
	if err != nil {
		return err
	}
	built := map[string]bool{}
	for _, f := range files {
		built[f.Name] = true
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.JSON, 0o644); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if !built[filepath.Base(p)] {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	fmt.Printf("dashboards: %d written to %s\n", len(files), dir)
	return nil
}
