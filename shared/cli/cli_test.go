package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func testApp(ran *string, n *int) (*App, *bytes.Buffer, *bytes.Buffer) {
	var out, errw bytes.Buffer
	return &App{
		Name: "svc", About: "A service.", Default: "serve", Footer: "See README.md.", Stdout: &out, Stderr: &errw,
		Commands: []Command{
			{Name: "serve", Summary: "serve", Run: func(context.Context, *flag.FlagSet) error { *ran = "serve"; return nil }},
			{Name: "check", Summary: "check and exit", Help: "Checks.",
				Flags: func(fs *flag.FlagSet) { fs.IntVar(n, "n", 3, "how many") },
				Run: func(context.Context, *flag.FlagSet) error {
					*ran = "check"
					if *n == 7 {
						return &ExitError{Code: ExitFail}
					}
					if *n == 8 {
						return errors.New("broken")
					}
					return nil
				}},
		},
	}, &out, &errw
}

// TestHelpAndUsageErrors: help on the binary and on every command prints
// the usage on stdout and exits 0 without running anything; an unknown
// command or flag prints the usage on stderr and exits 2.
func TestHelpAndUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		ran        string
		out, errw  string
		notRunning bool
	}{
		{args: nil, code: 0, ran: "serve"},
		{args: []string{"--help"}, code: 0, out: "Commands:\n  serve     serve (the default)\n  check     check and exit\n  help"},
		{args: []string{"-h"}, code: 0, out: "Usage: svc [command] [flags]"},
		{args: []string{"help"}, code: 0, out: "See README.md."},
		{args: []string{"help", "check"}, code: 0, out: "Usage: svc check [flags]\n\ncheck and exit\n\nChecks.\n\nFlags:\n  --n int\n      how many (default 3)"},
		{args: []string{"check", "--help"}, code: 0, out: "Usage: svc check [flags]"},
		{args: []string{"check", "-h"}, code: 0, out: "--n int"},
		{args: []string{"serve", "--help"}, code: 0, out: "Usage: svc serve\n"},
		{args: []string{"serve", "help"}, code: 0, out: "Usage: svc serve\n"},
		{args: []string{"bogus"}, code: 2, errw: "svc: unknown command \"bogus\"\n\nUsage: svc"},
		{args: []string{"help", "bogus"}, code: 2, errw: "unknown command \"bogus\""},
		{args: []string{"--verbose"}, code: 2, errw: "unknown flag \"--verbose\""},
		{args: []string{"check", "--nope"}, code: 2, errw: "svc check: flag provided but not defined: -nope\n\nUsage: svc check [flags]"},
		{args: []string{"check", "extra"}, code: 2, errw: "unexpected argument \"extra\""},
		{args: []string{"check", "--n", "5"}, code: 0, ran: "check"},
		{args: []string{"check", "-n=7"}, code: 1, ran: "check"},
		{args: []string{"check", "-n", "8"}, code: 1, ran: "check", errw: "svc check: broken\n"},
	} {
		var ran string
		var n int
		a, out, errw := testApp(&ran, &n)
		code := a.Run(context.Background(), tc.args)
		if code != tc.code || ran != tc.ran || !strings.Contains(out.String(), tc.out) || !strings.Contains(errw.String(), tc.errw) {
			t.Errorf("%q: code %d ran %q\nstdout %q\nstderr %q", tc.args, code, ran, out, errw)
		}
		if tc.code == 2 && out.Len() > 0 || tc.code == 0 && errw.Len() > 0 {
			t.Errorf("%q: printed on the wrong stream: stdout %q stderr %q", tc.args, out, errw)
		}
	}
}
