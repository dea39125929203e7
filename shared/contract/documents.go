package contract

import (
	"time"

	"github.com/shopspring/decimal"
)

// Token program names, as the RPC's jsonParsed encoding spells them.
const (
	ProgramToken     = "spl-token"
	ProgramToken2022 = "spl-token-2022"
)

// Program ids of the two token programs.
const (
	ProgramIDToken     = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	ProgramIDToken2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
)

// MaxDecimals is the largest decimals of a mint this service publishes: a
// mint that reports more is refused by the supply collector, and a token
// file that states more is refused at start.
const MaxDecimals = 18

// Supply is the supply domain document, written by the supply collector.
// Amounts are raw base-unit integers as decimal strings; the edge formats
// them with Decimals.
type Supply struct {
	// Decimals is the mint's decimals, read from the ledger; at most
	// MaxDecimals.
	Decimals uint8 `json:"decimals"`
	// TotalRaw is the on-chain minted supply in base units (getTokenSupply).
	TotalRaw string `json:"total_raw"`
	// CirculatingRaw equals TotalRaw: every minted token circulates.
	CirculatingRaw string `json:"circulating_raw"`
	// MaxRaw is the disclosed maximum supply in base units (from config);
	// empty when the token's issuer discloses none.
	MaxRaw string `json:"max_raw"`
	// TokenProgram is ProgramToken or ProgramToken2022.
	TokenProgram string `json:"token_program"`
	// TokenProgramID is the owner program id of the mint account.
	TokenProgramID string `json:"token_program_id"`
	// MintAuthority is the address that can still mint, or nil when minting
	// is disabled for good.
	MintAuthority *string `json:"mint_authority"`
	// FreezeAuthority is the address that can freeze accounts, or nil.
	FreezeAuthority *string `json:"freeze_authority"`
	// Slot is the ledger slot of the getTokenSupply answer.
	Slot uint64 `json:"slot"`
	// Commitment is the commitment level the supply was read at.
	Commitment string `json:"commitment"`
	// Methodology explains how each figure is obtained.
	Methodology Methodology `json:"methodology"`
	// Warnings are disclosures (mint authority active, total above max...).
	Warnings []Warning `json:"warnings"`
	// CrossCheck is the agreement of the ledger nodes behind this figure
	// (crosscheck_supply.go); nil in a document written before it existed.
	CrossCheck *LedgerCrossCheck `json:"cross_check,omitempty"`
}

// WarnTotalAboveMax is the supply warning of an on-chain total above the
// configured maximum supply: one of the two published figures is wrong,
// so the service is degraded while it lasts.
const WarnTotalAboveMax = "total_above_max"

// Methodology explains the supply figures in plain words.
type Methodology struct {
	TotalSupply       string   `json:"total_supply"`
	CirculatingSupply string   `json:"circulating_supply"`
	MaxSupply         string   `json:"max_supply"`
	Rules             []string `json:"rules"`
}

// Metadata is the metadata domain document: the token's identity as the
// ledger states it, a cross-check of the official identity in the token
// file. Written by the supply collector.
type Metadata struct {
	// OnChain is nil when the ledger holds no metadata for the mint.
	OnChain *OnChainMetadata `json:"on_chain"`
	// Warnings, e.g. on-chain name differs from the official one.
	Warnings []Warning `json:"warnings"`
}

// Where on-chain metadata was found.
const (
	MetadataSourceToken2022 = "token-2022-metadata-extension"
	MetadataSourceMetaplex  = "metaplex-token-metadata"
)

// OnChainMetadata is the name, symbol and uri stored on the ledger.
type OnChainMetadata struct {
	Name   string `json:"name"`
	Symbol string `json:"symbol"`
	URI    string `json:"uri"`
	// Source is MetadataSourceToken2022 or MetadataSourceMetaplex.
	Source string `json:"source"`
	// Address of the account holding it (the mint itself for Token-2022).
	Address string `json:"address"`
	// UpdateAuthority can change the metadata; nil when none.
	UpdateAuthority *string `json:"update_authority"`
}

// Market status values.
const (
	// MarketOK: a usable pair was selected and the price is set.
	MarketOK = "ok"
	// MarketNotIndexed: the aggregator lists no pair for the token.
	MarketNotIndexed = "not_indexed"
	// MarketNoUsablePair: pairs exist, none has a positive USD price.
	MarketNoUsablePair = "no_usable_pair"
)

// Windows holds one value per aggregator window.
type Windows[T any] struct {
	M5  T `json:"m5"`
	H1  T `json:"h1"`
	H6  T `json:"h6"`
	H24 T `json:"h24"`
}

// Txns counts buy and sell transactions.
type Txns struct {
	Buys  int64 `json:"buys"`
	Sells int64 `json:"sells"`
}

// TokenRef identifies a token of a pair.
type TokenRef struct {
	Address string `json:"address"`
	Symbol  string `json:"symbol"`
	Name    string `json:"name"`
}

// Pair sides: where this service's token stands in a pair.
const (
	SideBase  = "base"
	SideQuote = "quote"
)

// Market is the market domain document, written by the market collector.
// USD figures are exact decimals (JSON strings here; the edge writes them
// as plain JSON numbers). When Status is not MarketOK, the price fields
// and Selected are nil.
type Market struct {
	// Status is MarketOK, MarketNotIndexed or MarketNoUsablePair.
	Status string `json:"status"`
	// PriceUSD is the token's USD price from the selected pair.
	PriceUSD *decimal.Decimal `json:"price_usd"`
	// PriceBasis is what PriceUSD was computed from and the significant
	// digits it carries (nil in documents of earlier versions).
	PriceBasis *PriceBasis `json:"price_basis,omitempty"`
	// PriceQuote is the token's price in the selected pair's other token.
	PriceQuote *decimal.Decimal `json:"price_quote"`
	// QuoteSymbol is the symbol PriceQuote is expressed in.
	QuoteSymbol string `json:"quote_symbol"`
	// PriceChange is the selected pair's price change in percent per
	// window (nil where the aggregator gave none).
	PriceChange Windows[*decimal.Decimal] `json:"price_change"`
	// LiquidityUSD sums liquidity.usd over kept pairs.
	LiquidityUSD decimal.Decimal `json:"liquidity_usd"`
	// VolumeUSD sums volume per window over kept pairs.
	VolumeUSD Windows[decimal.Decimal] `json:"volume_usd"`
	// Txns sums buys and sells per window over kept pairs.
	Txns Windows[Txns] `json:"txns"`
	// Selected is the pair the price comes from.
	Selected *Pair `json:"selected"`
	// Pairs is every detected pair, kept or not, with why.
	Pairs []Pair `json:"pairs"`
	// Official reports each official pair of the token file.
	Official []OfficialPair `json:"official"`
	// Rule states the selection rule in words.
	Rule string `json:"rule"`
	// Warnings: official pair missing, selected pair not official, price
	// moved more than the configured share since the last poll...
	Warnings []Warning `json:"warnings"`
	// CrossCheck compares the price with the second aggregator
	// (crosscheck_market.go); nil in documents written before it existed.
	CrossCheck *PriceCheck `json:"cross_check,omitempty"`
}

// Pair is one trading pair as detected at the aggregator.
type Pair struct {
	Address string `json:"address"`
	DexID   string `json:"dex"`
	URL     string `json:"url"`
	// Side is SideBase or SideQuote: where this token stands.
	Side  string   `json:"side"`
	Base  TokenRef `json:"base"`
	Quote TokenRef `json:"quote"`
	// PriceUSD is this token's USD price implied by the pair (nil when the
	// aggregator gave no usable price).
	PriceUSD *decimal.Decimal `json:"price_usd"`
	// PriceQuote is this token's price in the pair's other token.
	PriceQuote *decimal.Decimal `json:"price_quote"`
	// LiquidityUSD is nil when the aggregator reports no liquidity.
	LiquidityUSD *decimal.Decimal `json:"liquidity_usd"`
	// VolumeUSD24h is the pair's 24 h volume.
	VolumeUSD24h decimal.Decimal `json:"volume_usd_24h"`
	// CreatedAt is when the pair was created, when known.
	CreatedAt *time.Time `json:"created_at"`
	Labels    []string   `json:"labels"`
	Official  bool       `json:"official"`
	// Usable is true when the pair has a positive USD price.
	Usable bool `json:"usable"`
	// Reason says why a pair is not usable.
	Reason string `json:"reason,omitempty"`
}

// OfficialPair reports one pair the token file declares official.
type OfficialPair struct {
	Address  string `json:"address"`
	Found    bool   `json:"found"`
	Selected bool   `json:"selected"`
	// LiquidityUSD when found and reported.
	LiquidityUSD *decimal.Decimal `json:"liquidity_usd"`
}

// Holder enumeration methods.
const (
	HoldersMethodGPA = "getProgramAccounts"
	HoldersMethodDAS = "das"
	// HoldersMethodLive is a count that follows the token program's
	// notifications on top of a getProgramAccounts enumeration
	// (Holders.Live says which and when).
	HoldersMethodLive = "live"
)

// Holders is the holders domain document, written by the holders collector.
type Holders struct {
	// Holders counts unique owners whose summed balance of this mint is
	// above zero.
	Holders uint64 `json:"holders"`
	// TokenAccounts counts every token account of the mint seen.
	TokenAccounts uint64 `json:"token_accounts"`
	// NonZeroAccounts counts token accounts with a positive balance.
	NonZeroAccounts uint64 `json:"non_zero_accounts"`
	// Method is HoldersMethodGPA or HoldersMethodDAS.
	Method string `json:"method"`
	// Queries describes the enumeration queries that were merged.
	Queries []string `json:"queries"`
	// Slot is the ledger slot of the enumeration, when known.
	Slot uint64 `json:"slot"`
	// DurationSeconds is how long the enumeration took.
	DurationSeconds float64 `json:"duration_seconds"`
	// CrossCheck is the last comparison with the second holder source;
	// nil when none is configured (crosscheck_holders.go).
	CrossCheck *HoldersCheck `json:"cross_check,omitempty"`
	// Warnings carries WarnHoldersSourcesDisagree while the last
	// cross-check disagrees, WarnHoldersLiveDiffered while the last
	// resync of a live count found a difference.
	Warnings []Warning `json:"warnings,omitempty"`
	// Live is set when Method is HoldersMethodLive: the enumeration the
	// count is anchored on, and the last resync (holders_live.go).
	Live *HoldersLive `json:"live,omitempty"`
}

// Error kinds of a failed run, in status records and metrics.
const (
	ErrKindUnavailable = "upstream_unavailable"    // connection refused, reset, 5xx, timeout
	ErrKindRateLimited = "rate_limited"            // HTTP 429
	ErrKindForbidden   = "forbidden"               // HTTP 401/403
	ErrKindInvalid     = "invalid_response"        // malformed, truncated or implausible data
	ErrKindRPC         = "rpc_error"               // a JSON-RPC error object
	ErrKindUnsupported = "enumeration_unsupported" // the node cannot enumerate token accounts
	ErrKindTooLarge    = "enumeration_too_large"   // more token accounts or holders than the collector's ceilings
	ErrKindNodeBehind  = "node_unhealthy"          // -32005
	ErrKindStore       = "store_error"             // writing the document failed
	ErrKindConfig      = "config_error"
	ErrKindInternal    = "internal"
)

// Status is a collector's status record: the last run of each domain it
// writes. Messages never carry a URL or a key.
type Status struct {
	// Collector is CollectorSupply, CollectorMarket or CollectorHolders.
	Collector string `json:"collector"`
	// Simulated is true in demo mode.
	Simulated bool `json:"simulated,omitempty"`
	// Runs holds the last run per domain.
	Runs map[Domain]Run `json:"runs"`
	// Subscriptions are the supply collector's PubSub subscriptions to
	// the mint, one per ledger node in configuration order (absent for
	// the other collectors).
	Subscriptions []LedgerSubscription `json:"subscriptions,omitempty"`
}

// Subscription states of LedgerSubscription.State.
const (
	// SubscriptionConnected: the socket is open and the mint subscribed.
	SubscriptionConnected = "connected"
	// SubscriptionConnecting: the socket is being opened, or waits for
	// its next try after a failure.
	SubscriptionConnecting = "connecting"
	// SubscriptionUnsupported: the node refused the WebSocket upgrade
	// (HTTP 4xx): it is polled only, and tried again at the longest wait.
	SubscriptionUnsupported = "unsupported"
	// SubscriptionOff: SOLANA_WS_URLS turns this node's socket off.
	SubscriptionOff = "off"
)

// SubscriptionStates lists every LedgerSubscription.State.
var SubscriptionStates = []string{SubscriptionConnected, SubscriptionConnecting, SubscriptionUnsupported, SubscriptionOff}

// LedgerSubscription is the supply collector's subscription to the mint
// account on one ledger node (accountSubscribe over the node's PubSub
// WebSocket). A notification only makes the collector poll at once; the
// figure published is still the cross-check's.
type LedgerSubscription struct {
	// Node is the node's number, 1..N in SOLANA_RPC_URLS order.
	Node int `json:"node"`
	// State is one of the Subscription* states.
	State string `json:"state"`
	// Since is when the subscription entered State.
	Since time.Time `json:"since"`
	// LastNotificationAt is when the node last notified a change of the
	// mint, if ever.
	LastNotificationAt *time.Time `json:"last_notification_at"`
	// LastNotificationSlot is that notification's context slot (0 when
	// none).
	LastNotificationSlot uint64 `json:"last_notification_slot"`
	// Reconnects counts the tries to open a socket after the first one,
	// failed tries included.
	Reconnects int `json:"reconnects"`
	// Error is why the last socket ended or failed, without any secret.
	Error string `json:"error,omitempty"`
}

// Run is one poll of one domain.
type Run struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// OK is true when the run wrote a document.
	OK bool `json:"ok"`
	// Upstream is the upstream the run read, e.g. UpstreamDexScreener.
	Upstream string `json:"upstream"`
	// ErrorKind is one of the ErrKind constants when OK is false.
	ErrorKind string `json:"error_kind,omitempty"`
	// Error is a message without secrets.
	Error string `json:"error,omitempty"`
	// Remedy says what an operator can do, when known.
	Remedy string `json:"remedy,omitempty"`
	// ConsecutiveFailures counts failed runs since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// LastSuccessAt is when the domain was last written, if ever.
	LastSuccessAt *time.Time `json:"last_success_at"`
	// Note carries what is worth knowing of a successful run, such as the
	// fallback source used.
	Note string `json:"note,omitempty"`
	// Ledger is the supply run's cross-check of the ledger nodes, whether
	// or not it published (crosscheck_supply.go).
	Ledger *LedgerCrossCheck `json:"ledger,omitempty"`
}
