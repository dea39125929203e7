package supply

import (
	"errors"
	"fmt"
	"strconv"
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
	// Quorum is how many ledger nodes must confirm a changed supply
	// (SUPPLY_QUORUM): "majority", or a number from 1 to the number of
	// nodes.
	Quorum string `env:"QUORUM" doc:"How many ledger nodes of SOLANA_RPC_URLS must confirm a supply, at slots at or after the last published one, before it is published: majority (more than half), or a number from 1 to the number of nodes." envDefault:"majority"`
	// NodeMaxLag is how many slots a node may lag behind the quorum
	// before the cross-check is degraded (SUPPLY_NODE_MAX_LAG).
	NodeMaxLag uint64 `env:"NODE_MAX_LAG" doc:"Slots a ledger node may lag behind the quorum before the supply cross-check, and /api/status, turn degraded (150 slots: about a minute)." envDefault:"150"`
	// WSPing is how often each PubSub socket is pinged (SUPPLY_WS_PING).
	WSPing time.Duration `env:"WS_PING" doc:"How often the supply collector pings each ledger node's PubSub WebSocket (SOLANA_WS_URLS)." envDefault:"10s" min:"10ms" max:"10m"`
	// WSSilence bounds a silent socket (SUPPLY_WS_SILENCE): no message
	// nor pong within it, and the socket is opened again.
	WSSilence time.Duration `env:"WS_SILENCE" doc:"A PubSub WebSocket that sends no message nor pong within this is closed and opened again; above SUPPLY_WS_PING." envDefault:"30s" min:"20ms" max:"1h"`
	// WSBackoff and WSBackoffMax bound the wait before a socket is
	// opened again: it doubles from WSBackoff up to WSBackoffMax, with
	// ±50 % jitter; a node that refuses the upgrade waits WSBackoffMax.
	WSBackoff    time.Duration `env:"WS_BACKOFF" doc:"First wait before a ledger node's PubSub WebSocket is opened again after it ended or failed; it doubles after each failure, with ±50 % jitter." envDefault:"1s" min:"1ms" max:"10m"`
	WSBackoffMax time.Duration `env:"WS_BACKOFF_MAX" doc:"Longest wait between two tries of a PubSub WebSocket; a node that refuses the upgrade (HTTP 4xx: no PubSub) is tried again only this often." envDefault:"60s" min:"1ms" max:"1h"`
}

// quorumOf is the quorum of n nodes: SUPPLY_QUORUM, checked against n.
func (c Config) quorumOf(n int) (int, error) {
	if c.Quorum == "majority" || c.Quorum == "" { // "": a Config built in code
		return n/2 + 1, nil
	}
	q, err := strconv.Atoi(c.Quorum)
	if err != nil {
		return 0, fmt.Errorf("SUPPLY_QUORUM: %q is not majority or a number", c.Quorum)
	}
	if q < 1 || q > n {
		return 0, fmt.Errorf("SUPPLY_QUORUM: %d is not between 1 and the %d configured ledger node(s)", q, n)
	}
	return q, nil
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

// withWSDefaults fills the PubSub fields a Config built in code leaves
// zero with their defaults (LoadConfig always sets them).
func (c Config) withWSDefaults() Config {
	d := DefaultConfig()
	if c.WSPing == 0 {
		c.WSPing = d.WSPing
	}
	if c.WSSilence == 0 {
		c.WSSilence = d.WSSilence
	}
	if c.WSBackoff == 0 {
		c.WSBackoff = d.WSBackoff
	}
	if c.WSBackoffMax == 0 {
		c.WSBackoffMax = d.WSBackoffMax
	}
	return c
}

// Validate checks every field and names the variable at fault.
func (c Config) Validate() error {
	errs := []error{config.CheckBounds(c, "SUPPLY_")}
	switch c.Commitment {
	case CommitmentProcessed, CommitmentConfirmed, CommitmentFinalized:
	default:
		errs = append(errs, fmt.Errorf("SUPPLY_COMMITMENT: %q is not processed, confirmed or finalized", c.Commitment))
	}
	if _, err := c.quorumOf(config.MaxLedgerNodes); err != nil {
		errs = append(errs, err)
	}
	if c.WSSilence <= c.WSPing {
		errs = append(errs, fmt.Errorf("SUPPLY_WS_SILENCE: %s must be above SUPPLY_WS_PING (%s), or every quiet socket is dropped", c.WSSilence, c.WSPing))
	}
	if c.WSBackoffMax < c.WSBackoff {
		errs = append(errs, fmt.Errorf("SUPPLY_WS_BACKOFF_MAX: %s is below SUPPLY_WS_BACKOFF (%s)", c.WSBackoffMax, c.WSBackoff))
	}
	return errors.Join(errs...)
}
