package process

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/cli"
	"github.com/tokendata/tokendata/shared/logging"
)

// Footer closes every binary's usage: where its configuration is
// documented.
const Footer = `Configuration is the environment (docs/environment.md lists every variable)
and the token file named by TOKEN_CONFIG (docs/token-file.md describes every key).
README.md says how to run it.`

// CheckHelp explains the check subcommand of every binary.
const CheckHelp = `Validates the environment and the token file with the loaders serving uses,
then probes what this binary reads (Redis, the Solana RPC node, DexScreener and
GeckoTerminal) with its collectors' own clients, and prints one verdict per
endpoint group: ok, warn (served, with the warning the API discloses), FAIL
(with the remedy to apply) or skip. It writes nothing and serves nothing.
Secrets (the keys in RPC URLs, Redis passwords) are never printed.

Exit status: 0 when serving would answer every endpoint of the group(s) this
binary decides, 1 when an item failed, 2 on a usage error.`

// Service describes a cluster service's command line.
type Service struct {
	// Name is the binary ("supply").
	Name string
	// About is the paragraph of its usage.
	About string
	// ServeHelp explains what serve does.
	ServeHelp string
	// Serve runs the service until ctx is done, its log lines on out.
	Serve func(ctx context.Context, out io.Writer) error
	// CheckFlags registers the check's own flags (nil: none).
	CheckFlags func(fs *flag.FlagSet)
	// Probe adds the service's probes to r, once the configuration
	// passed (c is never nil).
	Probe func(ctx context.Context, c *Checked, r *check.Report)
}

// App is the command line of a cluster service: serve (the default) and
// check.
func (s Service) App() *cli.App {
	app := &cli.App{Name: s.Name, About: s.About, Default: "serve", Footer: Footer}
	app.Commands = []cli.Command{
		{Name: "serve", Summary: "run the " + s.Name + " service until SIGTERM", Help: s.ServeHelp,
			Run: func(ctx context.Context, _ *flag.FlagSet) error {
				if err := s.Serve(ctx, app.Out()); err != nil {
					logging.New(app.Out(), s.Name, slog.LevelInfo).Error("exit", "error", err.Error())
					return &cli.ExitError{Code: cli.ExitFail}
				}
				return nil
			}},
		{Name: "check", Summary: "validate the configuration and probe the upstreams, print a verdict per endpoint group, and exit",
			Help: CheckHelp, Flags: s.CheckFlags,
			Run: func(ctx context.Context, _ *flag.FlagSet) error {
				return RunCheck(ctx, app.Out(), CheckSetup{Service: s.Name, NeedRedis: true}, s.Probe)
			}},
	}
	return app
}

// RunCheck runs a whole check: the configuration (CheckStart), then probe
// when it passed; it prints the report on out and returns an exit error
// when an item failed.
func RunCheck(ctx context.Context, out io.Writer, setup CheckSetup, probe func(ctx context.Context, c *Checked, r *check.Report)) error {
	r := &check.Report{Title: "tokendata " + setup.Service + " check"}
	if c := CheckStart(ctx, r, setup); c != nil {
		probe(ctx, c, r)
		c.Close()
	}
	if err := r.Write(out); err != nil {
		return err
	}
	if r.Failed() {
		return &cli.ExitError{Code: cli.ExitFail}
	}
	return nil
}
