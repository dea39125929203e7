// Package logging builds the process logger: log/slog, JSON, one object
// per line.
package logging

import (
	"io"
	"log/slog"

	"github.com/tokendata/tokendata/shared/buildinfo"
)

// New returns a JSON logger at level that tags every line with the
// service name.
func New(w io.Writer, service string, level slog.Level) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(h).With("service", service)
}

// Start logs the start line: version, commit, and the effective config
// (whose secrets mask themselves through config.Secret).
func Start(log *slog.Logger, cfg any) {
	log.Info("starting", "version", buildinfo.Version, "commit", buildinfo.Commit,
		"go", buildinfo.GoVersion(), "config", cfg)
}
