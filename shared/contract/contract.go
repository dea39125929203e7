// Package contract is the agreement between the collectors and the edge:
// Redis keys, the JSON envelope every value is wrapped in, the per-domain
// timings, and the Go types of the four domain documents and of a
// collector's status record. docs/data-model.md describes them for
// operators; docs/api.md describes the public bodies the edge renders
// from them.
//
// Collectors write these types; the edge reads them and renders the public
// bodies. history.go names the history's measures, tiers, windows, keys
// and points (docs/data-model.md). Amounts travel as raw base-unit integer strings plus decimals;
// USD figures as exact decimals. Nothing here is ever a float.
package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// SchemaVersion is the envelope version this code writes and understands.
const SchemaVersion = 1

// KeyPrefix starts every key of this service.
const KeyPrefix = "tokendata"

// Domain is one kind of document.
type Domain string

// The four domains.
const (
	DomainSupply   Domain = "supply"
	DomainMetadata Domain = "metadata"
	DomainMarket   Domain = "market"
	DomainHolders  Domain = "holders"
)

// Domains lists every domain in a stable order.
var Domains = []Domain{DomainSupply, DomainMetadata, DomainMarket, DomainHolders}

// Valid reports whether d is one of the four domains.
func (d Domain) Valid() bool {
	switch d {
	case DomainSupply, DomainMetadata, DomainMarket, DomainHolders:
		return true
	}
	return false
}

// Collector names, used in status keys and metrics.
const (
	CollectorSupply  = "supply" // writes supply and metadata
	CollectorMarket  = "market"
	CollectorHolders = "holders"
)

// Collectors lists every collector in a stable order.
var Collectors = []string{CollectorSupply, CollectorMarket, CollectorHolders}

// DocumentKey is the Redis key of a domain document: tokendata:<mint>:<domain>.
func DocumentKey(mint string, d Domain) string {
	return KeyPrefix + ":" + mint + ":" + string(d)
}

// StatusKey is the Redis key of a collector's status record:
// tokendata:<mint>:status:<collector>.
func StatusKey(mint, collector string) string {
	return KeyPrefix + ":" + mint + ":status:" + collector
}

// UpdatesChannel is the pub/sub channel on which a collector publishes the
// domain name after each write: tokendata:<mint>:updates.
func UpdatesChannel(mint string) string {
	return KeyPrefix + ":" + mint + ":updates"
}

// Timing is how often a domain is refreshed, when it counts as stale, and
// how long Redis keeps it.
type Timing struct {
	Refresh    time.Duration `json:"refresh"`
	StaleAfter time.Duration `json:"stale_after"`
	TTL        time.Duration `json:"ttl"`
}

// Validate checks the contract's rules: all positive, stale-after at least
// the refresh, and ttl ≥ 2 × refresh.
func (t Timing) Validate() error {
	switch {
	case t.Refresh <= 0:
		return errors.New("refresh must be positive")
	case t.StaleAfter < t.Refresh:
		return fmt.Errorf("stale-after %s is shorter than the refresh %s", t.StaleAfter, t.Refresh)
	case t.TTL < 2*t.Refresh:
		return fmt.Errorf("ttl %s is shorter than twice the refresh %s", t.TTL, t.Refresh)
	case t.TTL < t.StaleAfter:
		return fmt.Errorf("ttl %s is shorter than stale-after %s", t.TTL, t.StaleAfter)
	}
	return nil
}

// DefaultTimings are the default refresh, stale-after and TTL of each
// domain (docs/environment.md, docs/data-model.md).
var DefaultTimings = map[Domain]Timing{
	DomainMarket:   {Refresh: 60 * time.Second, StaleAfter: 180 * time.Second, TTL: 10 * time.Minute},
	DomainSupply:   {Refresh: 300 * time.Second, StaleAfter: 900 * time.Second, TTL: 7 * 24 * time.Hour},
	DomainMetadata: {Refresh: 3600 * time.Second, StaleAfter: 24 * time.Hour, TTL: 30 * 24 * time.Hour},
	DomainHolders:  {Refresh: 900 * time.Second, StaleAfter: 3600 * time.Second, TTL: 7 * 24 * time.Hour},
}

// StatusTTL is how long a status record lives without being rewritten.
const StatusTTL = 30 * 24 * time.Hour

// Envelope wraps every value stored in Redis.
type Envelope struct {
	// SchemaVersion is the version of this envelope and of the document
	// types; readers refuse versions they do not know.
	SchemaVersion int `json:"schema_version"`
	// Domain names the document type in Data.
	Domain Domain `json:"domain"`
	// Mint is the token's mint address (base58).
	Mint string `json:"mint"`
	// UpdatedAt is when the collector finished reading the upstream (UTC).
	UpdatedAt time.Time `json:"updated_at"`
	// Source says where Data came from.
	Source Source `json:"source"`
	// Data is the domain document (Supply, Metadata, Market or Holders).
	Data json.RawMessage `json:"data"`
}

// Source describes the upstream a document was read from. It never holds
// a URL: RPC URLs carry API keys.
type Source struct {
	// Name is the upstream: "solana-rpc", "dexscreener", "geckoterminal".
	Name string `json:"name"`
	// Method is how it was asked: an RPC method, "das", an endpoint name.
	Method string `json:"method,omitempty"`
	// Commitment is the ledger commitment level of RPC reads.
	Commitment string `json:"commitment,omitempty"`
	// Slot is the ledger slot the data was read at, when known.
	Slot uint64 `json:"slot,omitempty"`
	// Simulated is true in demo mode, when the upstream is the simulator.
	Simulated bool `json:"simulated,omitempty"`
}

// Upstream names used in Source.Name and status records.
const (
	UpstreamSolanaRPC     = "solana-rpc"
	UpstreamDexScreener   = "dexscreener"
	UpstreamGeckoTerminal = "geckoterminal"
)

// ErrUnknownSchema is returned for an envelope whose schema_version this
// code does not know. Readers keep what they had and report it.
var ErrUnknownSchema = errors.New("unknown schema_version")

// NewEnvelope wraps doc for domain d.
func NewEnvelope(mint string, d Domain, updatedAt time.Time, src Source, doc any) (Envelope, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode %s document: %w", d, err)
	}
	return Envelope{
		SchemaVersion: SchemaVersion,
		Domain:        d,
		Mint:          mint,
		UpdatedAt:     updatedAt.UTC().Truncate(time.Millisecond),
		Source:        src,
		Data:          data,
	}, nil
}

// Validate checks what every reader relies on.
func (e Envelope) Validate() error {
	switch {
	case e.SchemaVersion != SchemaVersion:
		return fmt.Errorf("%w %d (this build knows %d)", ErrUnknownSchema, e.SchemaVersion, SchemaVersion)
	case !e.Domain.Valid():
		return fmt.Errorf("unknown domain %.32q", e.Domain) // bounded: any writer's bytes
	case e.Mint == "":
		return errors.New("envelope without mint")
	case e.UpdatedAt.IsZero():
		return errors.New("envelope without updated_at")
	case len(e.Data) == 0 || string(e.Data) == "null":
		return errors.New("envelope without data")
	}
	return nil
}

// MaxClockSkew is how far ahead of a reader's clock a document may be
// dated. Clocks of different hosts disagree by a little; a document dated
// further ahead is refused, since it would otherwise look fresh (age
// negative, never stale) for as long as its date is ahead.
const MaxClockSkew = time.Minute

// ValidateAt is Validate, and also refuses a document dated more than
// MaxClockSkew after now (the reader's clock).
func (e Envelope) ValidateAt(now time.Time) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if ahead := e.UpdatedAt.Sub(now); ahead > MaxClockSkew {
		return fmt.Errorf("updated_at %s is %s ahead of this reader's clock (at most %s allowed)",
			e.UpdatedAt.UTC().Format(time.RFC3339), ahead.Round(time.Second), MaxClockSkew)
	}
	return nil
}

// Decode unmarshals the envelope's data into doc, which must be the
// document type of its domain.
func (e Envelope) Decode(doc any) error {
	if err := json.Unmarshal(e.Data, doc); err != nil {
		return fmt.Errorf("decode %s document: %w", e.Domain, err)
	}
	return nil
}

// Warning is a disclosure attached to a document: something a consumer of
// the number should know.
type Warning struct {
	// Code is stable and machine-readable, e.g. "mint_authority_active".
	Code string `json:"code"`
	// Message explains it in one sentence.
	Message string `json:"message"`
}
