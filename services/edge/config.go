package edge

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/httpsig"
	"github.com/tokendata/tokendata/shared/store"
)

// Config is the edge's own configuration, read from EDGE_-prefixed
// environment variables (see LoadConfig). The defaults are the contract's.
type Config struct {
	// SnapshotPoll is how often the snapshot is re-read from the store
	// besides the update notifications (EDGE_SNAPSHOT_POLL).
	SnapshotPoll time.Duration `env:"SNAPSHOT_POLL" doc:"How often the edge re-reads the store besides the collectors' update notifications." envDefault:"2s" min:"100ms"`
	// StoreTimeout bounds one read of the store (EDGE_STORE_TIMEOUT).
	StoreTimeout time.Duration `env:"STORE_TIMEOUT" doc:"Bound of one read of the store." envDefault:"2s" min:"1ns"`
	// MaxDocumentBytes bounds a value read from the store: a document or
	// status record above it is refused without being read
	// (EDGE_MAX_DOCUMENT_BYTES, 4 KiB to 64 MiB).
	MaxDocumentBytes int64 `env:"MAX_DOCUMENT_BYTES" doc:"Largest document or status record the edge reads from the store; a larger one is refused unread (rejected in /api/status) and the last good one served." envDefault:"1048576" min:"4096" max:"67108864"`
	// CacheControlMarket is Cache-Control of the market group (EDGE_CACHE_CONTROL_MARKET).
	CacheControlMarket string `env:"CACHE_CONTROL_MARKET" doc:"Cache-Control of the market endpoints (price, market, market-data, market-pairs)." envDefault:"public, max-age=15, s-maxage=30, stale-while-revalidate=30, stale-if-error=300"`
	// CacheControlSupply is Cache-Control of the supply group (EDGE_CACHE_CONTROL_SUPPLY).
	CacheControlSupply string `env:"CACHE_CONTROL_SUPPLY" doc:"Cache-Control of the supply endpoints (total-supply, circulating-supply, supply, coingecko-supply)." envDefault:"public, max-age=60, s-maxage=300, stale-while-revalidate=300, stale-if-error=86400"`
	// CacheControlHolders is Cache-Control of the holders group (EDGE_CACHE_CONTROL_HOLDERS).
	CacheControlHolders string `env:"CACHE_CONTROL_HOLDERS" doc:"Cache-Control of /api/holders." envDefault:"public, max-age=300, s-maxage=900, stale-while-revalidate=900, stale-if-error=86400"`
	// CacheControlStatic is Cache-Control of the static group (EDGE_CACHE_CONTROL_STATIC).
	CacheControlStatic string `env:"CACHE_CONTROL_STATIC" doc:"Cache-Control of the static endpoints (max-supply, token-metadata, exchanges, openapi.json)." envDefault:"public, max-age=300, s-maxage=3600, stale-while-revalidate=3600, stale-if-error=86400"`
	// CORSMaxAge is Access-Control-Max-Age of preflight answers (EDGE_CORS_MAX_AGE).
	CORSMaxAge time.Duration `env:"CORS_MAX_AGE" doc:"Access-Control-Max-Age of preflight answers (0: none)." envDefault:"24h" min:"0s"`
	// AccessLogSample logs one successful request (status < 400) in N:
	// 1 logs every one, 0 none (EDGE_ACCESS_LOG_SAMPLE). 4xx lines are at
	// debug level, 5xx at warn (503) or error.
	AccessLogSample int `env:"ACCESS_LOG_SAMPLE" doc:"Log one successful request in N (1: all, 0: none); 4xx are logged at debug, 5xx at warn (503) or error." envDefault:"100" min:"0"`
	// AccessLogRate caps the access log at this many lines per second for
	// one route and status; the next line written for them counts the
	// ones left out (EDGE_ACCESS_LOG_RATE). Metrics count every request.
	AccessLogRate int `env:"ACCESS_LOG_RATE" doc:"Most access log lines a second for one route and status; the next line counts those left out." envDefault:"10" min:"1"`
	// MaxConnections caps the open connections of the public listener,
	// idle keep-alive ones included; past it a new connection is answered
	// 503 and closed (EDGE_MAX_CONNECTIONS). 0 sizes it from the file
	// descriptor limit at start (fdlimit.go): 10,000, or the limit less
	// what is kept for Redis, upstreams and logs when that is fewer. A
	// configured cap above what the limit allows is refused at start.
	MaxConnections int `env:"MAX_CONNECTIONS" doc:"Most open connections of the public listener, idle keep-alive ones included; past it 503 too_many_connections. 0: sized at start from the file descriptor limit (RLIMIT_NOFILE): 10000, or the limit less an eighth of it (at least 128) kept for Redis, upstreams and logs when that is fewer. A cap above what the limit allows is refused at start." envDefault:"0" min:"0"`
	// ReadTimeout bounds the read of a request, from its first byte to the
	// end of its headers (requests carry no body; one that has a body is
	// answered without reading it) (EDGE_READ_TIMEOUT).
	ReadTimeout time.Duration `env:"READ_TIMEOUT" doc:"Time a client has to send a request's line and headers." envDefault:"5s" min:"10ms"`
	// WriteTimeout bounds the write of one answer, against clients that do
	// not read (EDGE_WRITE_TIMEOUT).
	WriteTimeout time.Duration `env:"WRITE_TIMEOUT" doc:"Time to write one answer." envDefault:"10s" min:"10ms"`
	// IdleTimeout closes a keep-alive connection idle this long (EDGE_IDLE_TIMEOUT).
	IdleTimeout time.Duration `env:"IDLE_TIMEOUT" doc:"How long an idle keep-alive connection stays open." envDefault:"60s" min:"10ms"`
	// MaxHeaderBytes bounds a request's line and headers; larger ones are
	// answered 431 (EDGE_MAX_HEADER_BYTES).
	MaxHeaderBytes int `env:"MAX_HEADER_BYTES" doc:"Largest request line and headers; past it 431 header_too_large." envDefault:"32768" min:"4096" max:"1048576"`
	// RetryAfter is the Retry-After of 503 answers (EDGE_RETRY_AFTER).
	RetryAfter time.Duration `env:"RETRY_AFTER" doc:"Retry-After of 503 answers." envDefault:"30s" min:"1s"`
	// ReadyGrace is how long after its first read of the store an edge
	// that does not hold every domain stays not ready, waiting for the
	// collectors to write back what an emptied Redis lost; 0 turns ready at
	// the first read (EDGE_READY_GRACE).
	ReadyGrace time.Duration `env:"READY_GRACE" doc:"How long after its first read of the store an edge that lacks a domain stays not ready (0: ready at once)." envDefault:"15s" min:"0s"`
	// Portal is on to serve the token's portal page at / and /index.html
	// (and its assets under /assets/), off to leave them out: / is then
	// the API's JSON 404, for operators who host their own site
	// (EDGE_PORTAL).
	Portal string `env:"PORTAL" doc:"on: serve the token's portal page at / and /index.html (assets under /assets/); off: / answers the API's JSON 404, for operators who host their own site." envDefault:"on"`
	// MaxEventStreams caps the open streams of /api/events; each is a
	// connection, counted within EDGE_MAX_CONNECTIONS. 0: half the
	// connection cap (EDGE_MAX_EVENT_STREAMS).
	MaxEventStreams int `env:"MAX_EVENT_STREAMS" doc:"Most streams of /api/events open at once; past it 503 too_many_streams. Each stream is a connection, counted within EDGE_MAX_CONNECTIONS, and must leave room for the other requests: 0 takes half the connection cap; a value at or above the cap is refused at start." envDefault:"0" min:"0"`
	// EventBuffer is how many events the edge keeps for clients that
	// reconnect with Last-Event-ID (EDGE_EVENT_BUFFER).
	EventBuffer int `env:"EVENT_BUFFER" doc:"Events of /api/events kept for clients that reconnect with Last-Event-ID; a client whose last event is older gets the current value of every event instead." envDefault:"1024" min:"16" max:"1000000"`
	// EventHeartbeat is how often an idle stream sends a comment
	// (EDGE_EVENT_HEARTBEAT).
	EventHeartbeat time.Duration `env:"EVENT_HEARTBEAT" doc:"How often an idle /api/events stream sends a comment line, so that proxies and clients see it alive." envDefault:"15s" min:"100ms" max:"5m"`
	// EventMaxAge ends a stream after this long (±10 %), so that clients
	// spread again over the replicas (EDGE_EVENT_MAX_AGE).
	EventMaxAge time.Duration `env:"EVENT_MAX_AGE" doc:"How long an /api/events stream lives (±10 %) before the edge ends it; the client reconnects with Last-Event-ID, to any replica, and loses nothing. It spreads streams over replicas added since." envDefault:"30m" min:"1s" max:"24h"`
	// EventWriteTimeout bounds one write to a subscriber
	// (EDGE_EVENT_WRITE_TIMEOUT).
	EventWriteTimeout time.Duration `env:"EVENT_WRITE_TIMEOUT" doc:"Time one write to an /api/events subscriber may take; a client that reads nothing for that long is dropped (it reconnects and resumes)." envDefault:"10s" min:"10ms" max:"5m"`
	// EventMaxPending bounds a subscriber's unsent bytes
	// (EDGE_EVENT_MAX_PENDING).
	EventMaxPending int64 `env:"EVENT_MAX_PENDING" doc:"Most bytes of events an /api/events subscriber may have left unsent, counted before the newest change (one change goes whole to a subscriber that had all before it); past it the subscriber is dropped, never buffered for without end." envDefault:"1048576" min:"4096" max:"1073741824"`
	// EventRetry is the reconnection delay the stream asks of its clients
	// (EDGE_EVENT_RETRY).
	EventRetry time.Duration `env:"EVENT_RETRY" doc:"Reconnection delay /api/events asks of its clients (its retry field), ±25 % per stream so that the clients of an ending replica do not all come back at one instant." envDefault:"2s" min:"100ms" max:"5m"`
}

// PortalOn reports whether the portal page is served.
func (c Config) PortalOn() bool { return c.Portal != portalOff }

const portalOff = "off"

// DefaultConfig returns the defaults of every field, from the tags.
func DefaultConfig() Config { return config.Default[Config]() }

// LoadConfig reads the EDGE_ variables and validates them.
func LoadConfig() (Config, error) {
	var c Config
	if err := config.Load(&c, "EDGE_"); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate checks every field and names the variable at fault.
func (c Config) Validate() error {
	errs := []error{config.CheckBounds(c, "EDGE_")}
	for name, v := range map[string]string{
		"EDGE_CACHE_CONTROL_MARKET": c.CacheControlMarket, "EDGE_CACHE_CONTROL_SUPPLY": c.CacheControlSupply,
		"EDGE_CACHE_CONTROL_HOLDERS": c.CacheControlHolders, "EDGE_CACHE_CONTROL_STATIC": c.CacheControlStatic,
	} {
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\r\n") {
			errs = append(errs, fmt.Errorf("%s: must be a non-empty single-line header value", name))
		}
	}
	if c.Portal != "on" && c.Portal != portalOff {
		errs = append(errs, fmt.Errorf("EDGE_PORTAL: %.20q is neither on nor off", c.Portal))
	}
	return errors.Join(errs...)
}

// Deps is what the edge takes from the process that runs it: its own
// binary (Redis store) or standalone (in-memory store).
type Deps struct {
	// Store is where the collectors write; required.
	Store *store.Store
	// Registry takes the edge's metrics; nil: a private registry.
	Registry prometheus.Registerer
	// Log is the process logger; nil: discard.
	Log *slog.Logger
	// Demo is true when the upstreams are the simulator (standalone demo
	// mode); /api/status says so.
	Demo bool
	// Now is the clock; nil: time.Now. Tests set it.
	Now func() time.Time
	// SigningKey signs every answer of the API (Signing.Keys); nil: the
	// answers are not signed. PreviousKey, during a rotation, is
	// published in /api/keys after it.
	SigningKey  *httpsig.Key
	PreviousKey ed25519.PublicKey
}
