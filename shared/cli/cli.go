// Package cli is the command line every binary shares: subcommands with
// their flags, `-h`/`--help`/`help` on the binary and on every
// subcommand (usage on standard output, exit 0), and a usage error (an
// unknown subcommand or flag) that prints the usage on standard error and
// exits 2.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tokendata/tokendata/shared/lifecycle"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Command is one subcommand.
type Command struct {
	// Name is the word that selects it.
	Name string
	// Summary is one line for the binary's usage.
	Summary string
	// Args describes the operands after the flags in the usage line ("").
	Args string
	// Help is the text printed by `<binary> <name> --help` after the
	// usage line and before the flags.
	Help string
	// Flags registers the command's flags (nil: none).
	Flags func(fs *flag.FlagSet)
	// Run runs the command; an *ExitError sets the exit status without a
	// message of its own, any other error is printed and exits 1.
	Run func(ctx context.Context, fs *flag.FlagSet) error
}

// ExitError ends a command with a status and no further message.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// App is one binary.
type App struct {
	// Name is the binary's name.
	Name string
	// About is the paragraph under the usage line.
	About string
	// Default is the command run without arguments ("serve").
	Default string
	// Footer closes the binary's usage (where the configuration is
	// documented).
	Footer   string
	Commands []Command
	// Stdout and Stderr default to the process's.
	Stdout, Stderr io.Writer
}

// Main runs the binary on the process's arguments until SIGINT or
// SIGTERM, and exits with the command's status.
func Main(a *App) {
	ctx, stop := lifecycle.SignalContext(context.Background())
	code := a.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Out is where the App prints: Stdout, or the process's.
func (a *App) Out() io.Writer { return a.out() }

func (a *App) out() io.Writer {
	if a.Stdout != nil {
		return a.Stdout
	}
	return os.Stdout
}

func (a *App) errw() io.Writer {
	if a.Stderr != nil {
		return a.Stderr
	}
	return os.Stderr
}

func (a *App) command(name string) *Command {
	for i := range a.Commands {
		if a.Commands[i].Name == name {
			return &a.Commands[i]
		}
	}
	return nil
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// Run runs args (without the binary's name) and returns the exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		args = []string{a.Default}
	}
	if isHelp(args[0]) {
		if len(args) > 1 && args[0] == "help" {
			if c := a.command(args[1]); c != nil {
				a.commandUsage(a.out(), c, newFlagSet(c))
				return ExitOK
			}
			return a.usageError(fmt.Sprintf("unknown command %q", args[1]))
		}
		a.Usage(a.out())
		return ExitOK
	}
	c := a.command(args[0])
	if c == nil {
		if strings.HasPrefix(args[0], "-") {
			return a.usageError(fmt.Sprintf("unknown flag %q (flags follow a command: %s <command> [flags])", args[0], a.Name))
		}
		return a.usageError(fmt.Sprintf("unknown command %q", args[0]))
	}
	fs := newFlagSet(c)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.commandUsage(a.out(), c, fs)
			return ExitOK
		}
		_, _ = fmt.Fprintf(a.errw(), "%s %s: %v\n\n", a.Name, c.Name, err)
		a.commandUsage(a.errw(), c, fs)
		return ExitUsage
	}
	if c.Args == "" && fs.NArg() > 0 {
		if isHelp(fs.Arg(0)) {
			a.commandUsage(a.out(), c, fs)
			return ExitOK
		}
		_, _ = fmt.Fprintf(a.errw(), "%s %s: unexpected argument %q\n\n", a.Name, c.Name, fs.Arg(0))
		a.commandUsage(a.errw(), c, fs)
		return ExitUsage
	}
	err := c.Run(ctx, fs)
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	}
	_, _ = fmt.Fprintf(a.errw(), "%s %s: %v\n", a.Name, c.Name, err)
	return ExitFail
}

func newFlagSet(c *Command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the usage is printed by the App
	if c.Flags != nil {
		c.Flags(fs)
	}
	return fs
}

func (a *App) usageError(msg string) int {
	_, _ = fmt.Fprintf(a.errw(), "%s: %s\n\n", a.Name, msg)
	a.Usage(a.errw())
	return ExitUsage
}

// Usage prints the binary's usage.
func (a *App) Usage(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s [command] [flags]\n\n", a.Name)
	if a.About != "" {
		b.WriteString(strings.TrimSpace(a.About) + "\n\n")
	}
	b.WriteString("Commands:\n")
	for _, c := range a.Commands {
		summary := c.Summary
		if c.Name == a.Default {
			summary += " (the default)"
		}
		fmt.Fprintf(&b, "  %-9s %s\n", c.Name, summary)
	}
	fmt.Fprintf(&b, "  %-9s %s\n", "help", "print this help, or a command's: "+a.Name+" help <command>, "+a.Name+" <command> --help")
	if a.Footer != "" {
		b.WriteString("\n" + strings.TrimSpace(a.Footer) + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}

func (a *App) commandUsage(w io.Writer, c *Command, fs *flag.FlagSet) {
	var b strings.Builder
	line := a.Name + " " + c.Name
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		line += " [flags]"
	}
	if c.Args != "" {
		line += " " + c.Args
	}
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", line, c.Summary)
	if c.Help != "" {
		b.WriteString("\n" + strings.TrimSpace(c.Help) + "\n")
	}
	if hasFlags {
		b.WriteString("\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			head := "  --" + f.Name
			if name != "" {
				head += " " + name
			}
			fmt.Fprintf(&b, "%s\n      %s", head, usage)
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
			b.WriteString("\n")
		})
	}
	if a.Footer != "" {
		b.WriteString("\n" + strings.TrimSpace(a.Footer) + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}
