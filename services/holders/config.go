package holders

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// LiveAuto is HOLDERS_LIVE's default: live where the method can anchor
// it (LiveOn).
const LiveAuto = "auto"

// Program choices of HOLDERS_PROGRAM.
const (
	ProgramAuto      = "auto"
	ProgramToken     = "token"
	ProgramToken2022 = "token-2022"
)

// Config is the holders collector's own configuration, read with
// config.Load(&cfg, "HOLDERS_"). The RPC URL, the method and the timings
// belong to the common configuration (HOLDERS_RPC_URL, HOLDERS_METHOD,
// HOLDERS_REFRESH, HOLDERS_STALE_AFTER, HOLDERS_TTL).
type Config struct {
	// RPCTimeout bounds one RPC request, the whole getProgramAccounts
	// stream included (HOLDERS_RPC_TIMEOUT).
	RPCTimeout time.Duration `env:"RPC_TIMEOUT" doc:"Bound of one RPC request, the whole getProgramAccounts stream included." envDefault:"5m" min:"1ns"`
	// Program is the token program of the mint: auto (read the mint
	// account's owner with getAccountInfo first), token or token-2022
	// (HOLDERS_PROGRAM).
	Program string `env:"PROGRAM" doc:"Token program of the mint: auto (read the mint account's owner first), token or token-2022." envDefault:"auto"`
	// DASPageLimit is the page size of getTokenAccounts, 1 to 1000
	// (HOLDERS_DAS_PAGE_LIMIT).
	DASPageLimit int `env:"DAS_PAGE_LIMIT" doc:"Page size of DAS getTokenAccounts." envDefault:"1000" min:"1" max:"1000"`
	// Gzip asks the node for a gzip-compressed response (HOLDERS_GZIP).
	Gzip bool `env:"GZIP" doc:"Ask the node for a gzip-compressed answer." envDefault:"true"`
	// Commitment is the commitment level of the reads: processed,
	// confirmed or finalized (HOLDERS_COMMITMENT).
	Commitment string `env:"COMMITMENT" doc:"Ledger commitment of the reads: processed, confirmed or finalized." envDefault:"confirmed"`
	// ProgressInterval is how often a long enumeration logs its progress
	// (HOLDERS_PROGRESS_INTERVAL).
	ProgressInterval time.Duration `env:"PROGRESS_INTERVAL" doc:"How often a long enumeration logs its progress." envDefault:"10s" min:"1ns"`
	// MaxAccounts is the most token accounts one enumeration reads before
	// it fails with enumeration_too_large (HOLDERS_MAX_ACCOUNTS): far
	// above any token's, it stops a node that streams without end.
	MaxAccounts int64 `env:"MAX_ACCOUNTS" doc:"Most token accounts one enumeration reads before it fails with enumeration_too_large (the last good count stays served)." envDefault:"20000000" min:"1"`
	// MaxMemoryBytes is the most memory the owner set may take, 37 to 43
	// bytes a holder (HOLDERS_MAX_MEMORY_BYTES, default 192 MiB: about 4.5
	// million holders, in a process that then peaks near twice that with
	// the garbage collector's headroom, within the chart's 512 MiB; at
	// least 4 MiB, the empty set and its first chunk of keys).
	MaxMemoryBytes int64 `env:"MAX_MEMORY_BYTES" doc:"Most memory the owner set may take (37 to 43 bytes a holder; 192 MiB is about 4.5 million holders; the process peaks near twice it); past it enumeration_too_large." envDefault:"201326592" min:"4194304"`

	// Live is auto, true or false (HOLDERS_LIVE): the live count, a
	// programSubscribe of the mint's token accounts kept exact and
	// anchored on a getProgramAccounts enumeration (tally.Live,
	// follow.Follower, livecollect.go). auto follows it with
	// getProgramAccounts and scans with das (LiveOn); true requires
	// getProgramAccounts.
	Live string `env:"LIVE" doc:"Follow the holder count live: subscribe to the mint's token accounts (programSubscribe) on HOLDERS_WS_URL and keep the count of the last enumeration exact from the notifications, publishing a change within HOLDERS_PUBLISH_INTERVAL; a full enumeration then runs only every HOLDERS_RESYNC (and after a gap in the stream). auto: live with HOLDERS_METHOD=getProgramAccounts, scans with das (which has no subscription to anchor on); true: live, and HOLDERS_METHOD must be getProgramAccounts; false: scans every HOLDERS_REFRESH. A node that refuses the subscription, or whose socket never connects, keeps the scans of HOLDERS_REFRESH." envDefault:"auto"`
	// WSURL is the PubSub URL of the holders node (HOLDERS_WS_URL,
	// secret); empty: HOLDERS_RPC_URL's (or SOLANA_RPC_URL's) with https
	// turned into wss and http into ws.
	WSURL config.Secret `env:"WS_URL" doc:"PubSub WebSocket URL of the holders node for HOLDERS_LIVE. Secret. Unset: the holders RPC URL with https turned into wss (http into ws), key unchanged." empty:"unset it to derive it from the RPC URL, or give a ws:// or wss:// URL"`
	// PublishInterval bounds how often a changing live count is written
	// (HOLDERS_PUBLISH_INTERVAL).
	PublishInterval time.Duration `env:"PUBLISH_INTERVAL" doc:"With HOLDERS_LIVE, a changed holder count is published at most this often (and at least every HOLDERS_REFRESH when nothing changes)." envDefault:"2s" min:"100ms" max:"1m"`
	// Resync is how often a live count is re-anchored by a full
	// enumeration, compared with it at the same slot (HOLDERS_RESYNC).
	// The default, 30 h, reads a hundredth of the scans of the default
	// HOLDERS_REFRESH (96 enumerations a day) up to about a change a
	// second; a resync every few hours reads a twenty-fourth of them.
	Resync time.Duration `env:"RESYNC" doc:"With HOLDERS_LIVE, how often a full enumeration re-anchors the live count; the two counts are compared at the same slot and a difference is published as the holders_live_count_differed warning (the next resync then comes after HOLDERS_REFRESH). The default reads about a hundredth of what scans every 15 minutes read; 6h checks the count more often for four times the reads." envDefault:"30h" min:"1s" max:"720h"`
	// WSPing, WSSilence, WSBackoff and WSBackoffMax keep the socket as
	// the supply collector keeps its own (shared/pubsub).
	WSPing       time.Duration `env:"WS_PING" doc:"How often the holders collector pings its PubSub WebSocket (HOLDERS_LIVE)." envDefault:"10s" min:"10ms" max:"10m"`
	WSSilence    time.Duration `env:"WS_SILENCE" doc:"The holders PubSub WebSocket is dropped (and the live count with it, until a new enumeration re-anchors it) when it sends no message nor pong within this; above HOLDERS_WS_PING." envDefault:"30s" min:"20ms" max:"1h"`
	WSBackoff    time.Duration `env:"WS_BACKOFF" doc:"First wait before the holders PubSub WebSocket is opened again; it doubles after each failure, with ±50 % jitter." envDefault:"1s" min:"1ms" max:"10m"`
	WSBackoffMax time.Duration `env:"WS_BACKOFF_MAX" doc:"Longest wait between two tries of the holders PubSub WebSocket; a node that refuses it (HTTP 4xx, or programSubscribe refused) is tried again only this often." envDefault:"60s" min:"1ms" max:"1h"`

	// CrossCheckRPCURL is the second holder source (secret): another node
	// serving getProgramAccounts by mint, or a DAS endpoint
	// (HOLDERS_CROSSCHECK_RPC_URL). Unset: no cross-check.
	CrossCheckRPCURL config.Secret `env:"CROSSCHECK_RPC_URL" doc:"Second holder source, counted every HOLDERS_CROSSCHECK_EVERY × HOLDERS_REFRESH beside the polls with a live count (HOLDERS_LIVE, the default), or right after the primary every HOLDERS_CROSSCHECK_EVERY-th poll with scans, and compared with the primary (whose count is published, a disagreement flagged): another RPC node that serves getProgramAccounts by mint, or a DAS endpoint with HOLDERS_CROSSCHECK_METHOD=das. Secret. Unset: no cross-check." empty:"unset it for no cross-check, or give a URL"`
	// CrossCheckMethod is how the second source counts: getProgramAccounts
	// or das (HOLDERS_CROSSCHECK_METHOD).
	CrossCheckMethod string `env:"CROSSCHECK_METHOD" doc:"How the second holder source is enumerated: getProgramAccounts, or das (Helius getTokenAccounts)." envDefault:"getProgramAccounts"`
	// CrossCheckEvery spaces two cross-checks (HOLDERS_CROSSCHECK_EVERY):
	// CrossCheckEvery × Refresh apart with a live count (the default),
	// CrossCheckEvery polls apart with scans (1: every poll). After a check
	// that did not agree the next comes a Refresh later, or at the next poll.
	CrossCheckEvery int `env:"CROSSCHECK_EVERY" doc:"With a live count (HOLDERS_LIVE, the default): cross-check every N × HOLDERS_REFRESH, beside the polls, and HOLDERS_REFRESH after a check that did not agree. With scans: every N-th poll, and the next poll after a check that did not agree. Either way the first poll checks, and 4 with the 15-minute HOLDERS_REFRESH is hourly." envDefault:"4" min:"1" max:"1000"`
	// CrossCheckChurnFloor is the difference two counts at the same slot
	// may show (HOLDERS_CROSSCHECK_CHURN_FLOOR): an enumeration is not one
	// snapshot (DAS pages, Token-2022's two queries).
	CrossCheckChurnFloor int64 `env:"CROSSCHECK_CHURN_FLOOR" doc:"Holders two counts may differ by at the same slot (an enumeration is not one snapshot: DAS pages, Token-2022's two queries); allowed churn = floor + per-1000-slots rate x slot distance / 1000." envDefault:"5" min:"0"`
	// CrossCheckChurnPer1000Slots is how many more holders the allowed
	// churn grows by every 1,000 slots between the two counts
	// (HOLDERS_CROSSCHECK_CHURN_PER_1000_SLOTS).
	CrossCheckChurnPer1000Slots int64 `env:"CROSSCHECK_CHURN_PER_1000_SLOTS" doc:"How much the allowed churn between the two counts grows every 1,000 slots between them (500: one holder every 2 slots, about 4,500 an hour)." envDefault:"500" min:"0"`
}

// DefaultConfig is Config with every default, as LoadConfig gives it on
// an empty environment: the tags above.
func DefaultConfig() Config { return config.Default[Config]() }

// LoadConfig reads the HOLDERS_ variables and validates them.
func LoadConfig() (Config, error) {
	var c Config
	if err := config.Load(&c, "HOLDERS_"); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks every field and names the variable at fault.
func (c Config) Validate() error {
	errs := []error{config.CheckBounds(c, "HOLDERS_")}
	if _, _, err := c.liveMode(); err != nil {
		errs = append(errs, err)
	}
	switch c.Program {
	case ProgramAuto, ProgramToken, ProgramToken2022:
	default:
		errs = append(errs, fmt.Errorf("HOLDERS_PROGRAM: %q is not auto, token or token-2022", c.Program))
	}
	if c.CrossCheckRPCURL != "" {
		if err := config.CheckHTTPURL(c.CrossCheckRPCURL); err != nil {
			errs = append(errs, fmt.Errorf("HOLDERS_CROSSCHECK_RPC_URL: %w", err))
		}
	}
	switch c.CrossCheckMethod {
	case contract.HoldersMethodGPA, contract.HoldersMethodDAS:
	default:
		errs = append(errs, fmt.Errorf("HOLDERS_CROSSCHECK_METHOD: %q is not %s or %s", c.CrossCheckMethod, contract.HoldersMethodGPA, contract.HoldersMethodDAS))
	}
	if c.WSURL != "" {
		if err := checkWSURL(c.WSURL); err != nil {
			errs = append(errs, fmt.Errorf("HOLDERS_WS_URL: %w", err))
		}
	}
	if c.WSSilence <= c.WSPing {
		errs = append(errs, fmt.Errorf("HOLDERS_WS_SILENCE: %s must be above HOLDERS_WS_PING (%s), or every quiet socket is dropped", c.WSSilence, c.WSPing))
	}
	if c.WSBackoffMax < c.WSBackoff {
		errs = append(errs, fmt.Errorf("HOLDERS_WS_BACKOFF_MAX: %s is below HOLDERS_WS_BACKOFF (%s)", c.WSBackoffMax, c.WSBackoff))
	}
	switch c.Commitment {
	case "processed", "confirmed", "finalized":
	default:
		errs = append(errs, fmt.Errorf("HOLDERS_COMMITMENT: %q is not processed, confirmed or finalized", c.Commitment))
	}
	return errors.Join(errs...)
}

// liveMode reads HOLDERS_LIVE: auto gives set false; true or false
// (any spelling strconv.ParseBool takes, as when it was a boolean) give
// set true and the value.
func (c Config) liveMode() (on, set bool, err error) {
	if c.Live == LiveAuto {
		return false, false, nil
	}
	on, err = strconv.ParseBool(c.Live)
	if err != nil {
		return false, false, fmt.Errorf("HOLDERS_LIVE: %q is not auto, true or false", c.Live)
	}
	return on, true, nil
}

// LiveOn says whether the collector keeps a live count with the
// enumeration method (HOLDERS_METHOD): with HOLDERS_LIVE auto, where the
// method anchors it (getProgramAccounts); true with das is an error.
func (c Config) LiveOn(method string) (bool, error) {
	on, set, err := c.liveMode()
	switch {
	case err != nil:
		return false, err
	case !set:
		return method == contract.HoldersMethodGPA, nil
	case on && method != contract.HoldersMethodGPA:
		return false, fmt.Errorf("HOLDERS_LIVE: the live count is anchored on getProgramAccounts enumerations, and HOLDERS_METHOD is %s: set HOLDERS_METHOD=%s, or HOLDERS_LIVE=auto or false", method, contract.HoldersMethodGPA)
	}
	return on, nil
}

// checkWSURL checks an absolute ws:// or wss:// URL, never quoting it
// (it carries the provider's key).
func checkWSURL(u config.Secret) error {
	p, err := url.Parse(u.Reveal())
	if err != nil || (p.Scheme != "ws" && p.Scheme != "wss") || p.Host == "" {
		return errors.New("not an absolute ws:// or wss:// URL")
	}
	return nil
}
