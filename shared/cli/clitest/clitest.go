// Package clitest (tests only) checks a service binary's command line the same way for
// every binary.
package clitest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/shared/cli"
)

// HelpOnEverySubcommand asserts that -h, --help and help work on app and
// on its serve and check subcommands (usage on stdout, exit 0, nothing
// run), and that an unknown subcommand or flag prints the usage on stderr
// and exits 2.
func HelpOnEverySubcommand(t *testing.T, app *cli.App) {
	t.Helper()
	var out, errw bytes.Buffer
	app.Stdout, app.Stderr = &out, &errw
	defer func() { app.Stdout, app.Stderr = nil, nil }()
	usage := "Usage: " + app.Name
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"serve", "--help"}, {"serve", "-h"}, {"help", "serve"},
		{"check", "--help"}, {"check", "-h"}, {"help", "check"},
	} {
		out.Reset()
		errw.Reset()
		if code := app.Run(context.Background(), args); code != 0 || errw.Len() > 0 ||
			!strings.HasPrefix(out.String(), usage) || !strings.Contains(out.String(), "docs/environment.md") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, errw.String(), out.String())
		}
	}
	for _, args := range [][]string{{"bogus"}, {"--bogus"}, {"check", "--bogus"}, {"serve", "extra"}} {
		out.Reset()
		errw.Reset()
		if code := app.Run(context.Background(), args); code != 2 || out.Len() > 0 || !strings.Contains(errw.String(), usage) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", args, code, out.String(), errw.String())
		}
	}
}
