// Package solanasim simulates a Solana JSON-RPC 2.0 node and the Helius DAS
// getTokenAccounts method on a loopback port, with the wire shapes of the
// real services.
//
// A Server serves a ledger (package ledger, its own lock) of one or more
// tokens (mint account, on-chain metadata and a deterministic holder set,
// see Token and Holders). getProgramAccounts is streamed: accounts are
// generated from (seed, index) while the response is written, so a
// million accounts cost the simulator little memory. Faults are injected
// per RPC method name through Faults (package fault); "*" applies to
// every HTTP request.
//
// Each port also speaks Solana's PubSub (accountSubscribe,
// accountNotification, accountUnsubscribe; programSubscribe,
// programNotification, programUnsubscribe with getProgramAccounts'
// filters) on a GET with Upgrade: websocket, at any path, as providers
// publish wss:// URLs with the path and key of their https:// ones (see
// pubsub.go and pubsub_program.go; a Node's socket faults are SocketFault;
// the fault table's routes accountSubscribe and programSubscribe refuse a
// subscription), and serves a control endpoint that mints, burns and
// changes holders on demand for other processes: POST
// /_simulator/burn?amount=N, POST /_simulator/mint?amount=N and POST
// /_simulator/holders/{new,open,sellout,back,move,close} (ControlPrefix;
// in Go, AdjustSupply, OpenHolder, SetHolderBalance, MoveHolderBalance and
// CloseHolderAccount). Each change lands at a new slot. HandleControl adds
// operations of its own (the simulator package's faults).
//
//	srv := solanasim.New()
//	_ = srv.AddToken(solanasim.Token{Mint: mint, Decimals: 9, Supply: s,
//		Holders: solanasim.Holders{Accounts: 10_000, Seed: 1}})
//	url, _ := srv.Start(ctx)
//	defer srv.Close()
//	truth, _ := srv.Truth(mint)
package solanasim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// The ledger's types, constants and addresses, under this package's
// names (see package ledger).
type (
	Token            = ledger.Token
	Holders          = ledger.Holders
	Truth            = ledger.Truth
	BalanceEntry     = ledger.BalanceEntry
	HolderChange     = ledger.HolderChange
	AccountChange    = ledger.AccountChange
	Program          = ledger.Program
	MetadataLocation = ledger.MetadataLocation
)

// Token programs, metadata locations and well-known program ids.
const (
	ProgramToken       = ledger.ProgramToken
	ProgramToken2022   = ledger.ProgramToken2022
	MetadataNone       = ledger.MetadataNone
	MetadataMetaplex   = ledger.MetadataMetaplex
	MetadataToken2022  = ledger.MetadataToken2022
	TokenProgramID     = ledger.TokenProgramID
	Token2022ProgramID = ledger.Token2022ProgramID
	MetadataProgramID  = ledger.MetadataProgramID
)

// MetadataAddress returns the Metaplex Token Metadata account address (PDA)
// of mint.
func MetadataAddress(mint string) (string, error) { return ledger.MetadataAddress(mint) }

// Option configures a Server.
type Option func(*Server)

// WithSlot sets the initial slot (default 300,000,000).
func WithSlot(slot uint64) Option { return func(s *Server) { s.startSlot = slot } }

// WithVersion sets the solana-core version reported by getVersion and in
// every context.apiVersion (default "2.2.14").
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithFullIndexes makes getProgramAccounts of the token programs answer
// queries that the mint index cannot serve (by scanning). By default the
// simulator behaves like a real node: such queries fail with -32010.
func WithFullIndexes() Option { return func(s *Server) { s.fullIndexes = true } }

// WithFlushEvery sets how many bytes getProgramAccounts writes between
// flushes (default 32 KiB).
func WithFlushEvery(n int) Option { return func(s *Server) { s.flushEvery = n } }

// Server is a simulated Solana RPC node over a ledger (package ledger).
// Its methods are safe for concurrent use.
//
// The Server holds what serves: the HTTP listener (a lock of its own),
// the PubSub sockets (a lock of their own each), the fault table, the
// health. The chain state is the Ledger's, behind the Ledger's lock,
// which is taken after any of the Server's and never before one (see
// ledger.Ledger).
type Server struct {
	version     string
	fullIndexes bool
	flushEvery  int
	startSlot   uint64 // WithSlot's, for New
	faults      *fault.Set
	ledger      *ledger.Ledger

	slotsBehind atomic.Uint64
	unhealthy   atomic.Bool

	handler http.Handler
	lis     listener

	// controls are HandleControl's operations, by name.
	controls sync.Map

	nextSub atomic.Uint64
	// sockets are the PubSub sockets served by Start's listener (a Node
	// keeps its own): Close ends them, since net/http does not close
	// hijacked connections.
	sockets socketSet
}

// New returns a Server with no token.
func New(opts ...Option) *Server {
	s := &Server{
		version:    "2.2.14",
		flushEvery: 32 << 10,
		startSlot:  300_000_000,
		faults:     fault.NewSet(),
		lis:        listener{name: "solanasim"},
	}
	for _, o := range opts {
		o(s)
	}
	s.ledger = ledger.New(s.startSlot)
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// AddToken registers t (replacing a token with the same mint). It returns
// an error when an address or a holder parameter is invalid.
func (s *Server) AddToken(t Token) error { return s.ledger.AddToken(t) }

// Handler returns the JSON-RPC handler (POST /, the PubSub WebSocket on a
// GET with Upgrade: websocket, and the control endpoint /_simulator/), for
// use with httptest or another server.
func (s *Server) Handler() http.Handler { return s.handler }

// HandleControl serves h at ControlPrefix+op (op without a slash, not
// burn, mint or holders), on the server's port and every node's.
func (s *Server) HandleControl(op string, h http.Handler) {
	s.controls.Store(op, h)
}

// Faults returns the server's fault table. Route names are the RPC method
// names ("getProgramAccounts", "getTokenAccounts", ...) and "*" for every
// HTTP request.
func (s *Server) Faults() *fault.Set { return s.faults }

// Start serves on an ephemeral port of 127.0.0.1 until ctx ends or Close is
// called, and returns the base URL ("http://127.0.0.1:port").
func (s *Server) Start(ctx context.Context) (string, error) { return s.StartOn(ctx, "", 0) }

// StartOn is Start on the given host (empty: 127.0.0.1) and port (0: an
// ephemeral one).
func (s *Server) StartOn(ctx context.Context, host string, port int) (string, error) {
	return s.lis.start(ctx, host, port, s.handler, s.Close)
}

// Close stops the server started by Start and waits for it to end. It is
// safe to call more than once.
func (s *Server) Close() error { return s.lis.close(&s.sockets) }

// listener is the HTTP listener of a Server or a Node; mu guards it alone.
type listener struct {
	name string // "solanasim", "solanasim: node": in errors
	mu   sync.Mutex
	srv  *http.Server
	done chan struct{}
}

// start serves h on host (empty: 127.0.0.1) and port (0: an ephemeral
// one) until ctx ends (then it calls stop) or close, and returns the base
// URL.
func (l *listener) start(ctx context.Context, host string, port int, h http.Handler, stop func() error) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil {
		return "", errors.New(l.name + " already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(listenHost(host), strconv.Itoa(port)))
	if err != nil {
		return "", fmt.Errorf("solanasim: listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	l.srv, l.done = srv, done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = stop()
		case <-done:
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// close stops the listener, drops the sockets it served (net/http does
// not close hijacked connections) and waits for it to end; it is safe to
// call more than once.
func (l *listener) close(sockets *socketSet) error {
	l.mu.Lock()
	srv, done := l.srv, l.done
	l.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	sockets.closeAll()
	<-done
	return err
}

// The ledger's reads and changes, as the Server's: see ledger.Ledger's
// methods of the same names for what each does.

// Truth is the exact ground truth of mint's holder set now (false: no such mint).
func (s *Server) Truth(mint string) (Truth, bool) { return s.ledger.Truth(mint) }

// Largest returns mint's 20 largest token accounts, largest first.
func (s *Server) Largest(mint string) ([]BalanceEntry, bool) { return s.ledger.Largest(mint) }

// Supply is mint's supply in base units now (false: no such mint).
func (s *Server) Supply(mint string) (uint64, bool) { return s.ledger.Supply(mint) }

// SetSupply changes mint's supply (the holder set is unchanged).
func (s *Server) SetSupply(mint string, supply uint64) error { return s.ledger.SetSupply(mint, supply) }

// SetMintAuthority sets mint's mint authority ("" disables it).
func (s *Server) SetMintAuthority(mint, a string) error { return s.ledger.SetMintAuthority(mint, a) }

// SetFreezeAuthority sets mint's freeze authority ("" disables it).
func (s *Server) SetFreezeAuthority(mint, a string) error {
	return s.ledger.SetFreezeAuthority(mint, a)
}

// AdjustSupply adds delta base units to mint's supply (negative: a burn)
// and returns the new supply; "" is the first token added.
func (s *Server) AdjustSupply(mint string, delta int64) (uint64, error) {
	ch, err := s.ledger.AdjustSupply(mint, delta)
	return ch.Supply, err
}

// OpenHolder opens a token account of mint ("" is the first token added)
// with a new owner and amount base units (0: an account opened empty).
func (s *Server) OpenHolder(mint string, amount uint64) (HolderChange, error) {
	return s.ledger.OpenHolder(mint, amount)
}

// SetHolderBalance sets the balance of mint's token account (0: a holder
// sold out).
func (s *Server) SetHolderBalance(mint, account string, amount uint64) (HolderChange, error) {
	return s.ledger.SetHolderBalance(mint, account, amount)
}

// MoveHolderBalance moves amount base units from one token account of
// mint to another, both changed in one slot.
func (s *Server) MoveHolderBalance(mint, from, to string, amount uint64) (HolderChange, error) {
	return s.ledger.MoveHolderBalance(mint, from, to, amount)
}

// CloseHolderAccount closes mint's token account, which must hold 0.
func (s *Server) CloseHolderAccount(mint, account string) (HolderChange, error) {
	return s.ledger.CloseHolderAccount(mint, account)
}

// BumpSlot advances the slot by n and returns the new slot.
func (s *Server) BumpSlot(n uint64) uint64 { return s.ledger.BumpSlot(n) }

// Slot returns the current (processed) slot.
func (s *Server) Slot() uint64 { return s.ledger.Slot() }

// SetHealthy makes getHealth answer "ok".
func (s *Server) SetHealthy() {
	s.unhealthy.Store(false)
	s.slotsBehind.Store(0)
}

// SetUnhealthy makes getHealth fail with -32005; slotsBehind > 0 is reported
// as data.numSlotsBehind.
func (s *Server) SetUnhealthy(slotsBehind uint64) {
	s.slotsBehind.Store(slotsBehind)
	s.unhealthy.Store(true)
}

// listenHost is host, or 127.0.0.1 when empty: the simulator serves
// loopback unless told otherwise (a pod of a demo cluster listens on all).
func listenHost(host string) string {
	if host == "" {
		return "127.0.0.1"
	}
	return host
}
