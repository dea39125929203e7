package collector

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/store"
)

// CheckFail adds the failure err to g as the check subcommand prints it:
// its kind, its message and the remedy the status record would carry.
func CheckFail(g *check.Group, subject string, err error) {
	ce := Classify(err)
	remedy := ce.Remedy
	if remedy == "" {
		remedy = "see the message; docs/data-model.md describes each error kind"
	}
	g.Fail(subject, fmt.Sprintf("%s: %s", ce.Kind, ce.Message), remedy)
}

// CheckDeps are the dependencies of a collector built only to be checked:
// a private in-memory store of mint (a check writes nothing where serving
// reads), a private registry and no log.
func CheckDeps(mint string) Deps {
	return Deps{Store: store.New(store.NewMemory(), mint), Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.DiscardHandler)}
}
