package supply

import (
	"errors"
	"fmt"
	"time"

	"github.com/tokendata/tokendata/shared/config"
)

// Commitment levels the ledger RPC accepts.
const (
	CommitmentProcessed = "processed"
	CommitmentConfirmed = "confirmed"
	CommitmentFinalized = "finalized"
)

// Config is the supply collector's own configuration: environment
// variables with the SUPPLY_ prefix (LoadConfig). The poll intervals are
// in config.Common (SUPPLY_REFRESH, METADATA_REFRESH...).
type Config struct {
	// Commitment is the ledger commitment of every read: processed,
	// confirmed or finalized (SUPPLY_COMMITMENT).
	Commitment string `env:"COMMITMENT" doc:"Ledger commitment of every read: processed, confirmed or finalized." envDefault:"finalized"`
	// RPCTimeout bounds one RPC call (SUPPLY_RPC_TIMEOUT).
	RPCTimeout time.Duration `env:"RPC_TIMEOUT" doc:"Bound of one RPC call." envDefault:"10s" min:"1ns" max:"10m"`
	// RetryAttempts is the number of tries of one poll, first included
	// (SUPPLY_RETRY_ATTEMPTS).
	RetryAttempts int `env:"RETRY_ATTEMPTS" doc:"Tries of one poll, the first included." envDefault:"3" min:"1" max:"10"`
	// RetryBase is the first wait between tries; it doubles each time,
	// with ±50 % jitter (SUPPLY_RETRY_BASE).
	RetryBase time.Duration `env:"RETRY_BASE" doc:"First wait between tries; it doubles after each, with ±50 % jitter." envDefault:"1s" min:"1ns" max:"1m"`
}

// DefaultConfig is the configuration with every default, as LoadConfig
// returns it from an empty environment: the tags above.
func DefaultConfig() Config { return config.Default[Config]() }

// LoadConfig reads the SUPPLY_ variables and validates them.
func LoadConfig() (Config, error) {
	var c Config
	if err := config.Load(&c, "SUPPLY_"); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks every field and names the variable at fault.
func (c Config) Validate() error {
	errs := []error{config.CheckBounds(c, "SUPPLY_")}
	switch c.Commitment {
	case CommitmentProcessed, CommitmentConfirmed, CommitmentFinalized:
	default:
		errs = append(errs, fmt.Errorf("SUPPLY_COMMITMENT: %q is not processed, confirmed or finalized", c.Commitment))
	}
	return errors.Join(errs...)
}
