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
	Commitment string `env:"COMMITMENT" envDefault:"finalized"`
	// RPCTimeout bounds one RPC call (SUPPLY_RPC_TIMEOUT).
	RPCTimeout time.Duration `env:"RPC_TIMEOUT" envDefault:"10s"`
	// RetryAttempts is the number of tries of one poll, first included
	// (SUPPLY_RETRY_ATTEMPTS).
	RetryAttempts int `env:"RETRY_ATTEMPTS" envDefault:"3"`
	// RetryBase is the first wait between tries; it doubles each time,
	// with ±50 % jitter (SUPPLY_RETRY_BASE).
	RetryBase time.Duration `env:"RETRY_BASE" envDefault:"1s"`
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
	var errs []error
	switch c.Commitment {
	case CommitmentProcessed, CommitmentConfirmed, CommitmentFinalized:
	default:
		errs = append(errs, fmt.Errorf("SUPPLY_COMMITMENT: %q is not processed, confirmed or finalized", c.Commitment))
	}
	if c.RPCTimeout <= 0 || c.RPCTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("SUPPLY_RPC_TIMEOUT: %s is not between 0 and 10m", c.RPCTimeout))
	}
	if c.RetryAttempts < 1 || c.RetryAttempts > 10 {
		errs = append(errs, fmt.Errorf("SUPPLY_RETRY_ATTEMPTS: %d is not between 1 and 10", c.RetryAttempts))
	}
	if c.RetryBase <= 0 || c.RetryBase > time.Minute {
		errs = append(errs, fmt.Errorf("SUPPLY_RETRY_BASE: %s is not between 0 and 1m", c.RetryBase))
	}
	return errors.Join(errs...)
}
