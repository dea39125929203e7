package main

import (
	"testing"

	"github.com/tokendata/tokendata/shared/cli/clitest"
)

// TestHelpOnEverySubcommand: -h, --help and help work on the binary and on
// each subcommand; an unknown subcommand or flag exits 2 with the usage.
func TestHelpOnEverySubcommand(t *testing.T) { clitest.HelpOnEverySubcommand(t, app) }
