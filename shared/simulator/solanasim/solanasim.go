// Package solanasim simulates a Solana JSON-RPC 2.0 node and the Helius DAS
// getTokenAccounts method on a loopback port, with the wire shapes of the
// real services.
//
// A Server holds one or more tokens (mint account, on-chain metadata and a
// deterministic holder set, see Token and Holders). getProgramAccounts is
// streamed: accounts are generated from (seed, index) while the response is
// written, so a million accounts cost the simulator little memory. Faults are
// injected per RPC method name through Faults (package fault); "*" applies to
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
)

// Option configures a Server.
type Option func(*Server)

// WithSlot sets the initial slot (default 300,000,000).
func WithSlot(slot uint64) Option { return func(s *Server) { s.slot.Store(slot) } }

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

// Server is a simulated Solana RPC node. Its methods are safe for concurrent
// use.
type Server struct {
	version     string
	fullIndexes bool
	flushEvery  int
	faults      *fault.Set

	slot        atomic.Uint64
	slotsBehind atomic.Uint64
	unhealthy   atomic.Bool

	mu      sync.RWMutex
	tokens  map[pubkey]*simToken
	byMeta  map[pubkey]*simToken // Metaplex metadata PDA -> token
	handler http.Handler

	srvMu sync.Mutex
	srv   *http.Server
	done  chan struct{}

	// defaultMint is the first token added: the one the control endpoint
	// (/_simulator/burn, /_simulator/mint) changes when it names none.
	defaultMint pubkey // guarded by mu
	hasDefault  bool   // guarded by mu

	// controls are HandleControl's operations, by name.
	controls sync.Map

	// changed is closed (and replaced) whenever the ledger changes: a
	// mint's state or the slot. PubSub sockets wait on it.
	chMu    sync.Mutex
	changed chan struct{}
	nextSub atomic.Uint64
	// sockets are the PubSub sockets served by Start's listener (a Node
	// keeps its own): Close ends them, since net/http does not close
	// hijacked connections.
	sockets socketSet
}

// simToken is a token registered on the server.
type simToken struct {
	state mintState // guarded by Server.mu
	// history holds the states the mint had, each from the slot it took
	// effect (guarded by Server.mu): what a lagging node answers.
	history []pastState
	holders *holderSet
	metaPDA pubkey
}

// New returns a Server with no token.
func New(opts ...Option) *Server {
	s := &Server{
		version:    "2.2.14",
		flushEvery: 32 << 10,
		faults:     fault.NewSet(),
		tokens:     map[pubkey]*simToken{},
		byMeta:     map[pubkey]*simToken{},
		changed:    make(chan struct{}),
	}
	s.slot.Store(300_000_000)
	for _, o := range opts {
		o(s)
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s
}

// AddToken registers t (replacing a token with the same mint). It returns
// an error when an address or a holder parameter is invalid.
func (s *Server) AddToken(t Token) error {
	mint, err := parsePubkey(t.Mint)
	if err != nil {
		return fmt.Errorf("solanasim: Mint: %w", err)
	}
	st := mintState{
		mint: mint, program: t.Program, decimals: t.Decimals, supply: t.Supply,
		metadata: t.Metadata, name: t.Name, symbol: t.Symbol, uri: t.URI,
		additional: append([][2]string(nil), t.AdditionalMetadata...),
	}
	if t.Program != ProgramToken && t.Program != ProgramToken2022 {
		return fmt.Errorf("solanasim: unknown Program %d", t.Program)
	}
	if t.Metadata == MetadataToken2022 && t.Program != ProgramToken2022 {
		return errors.New("solanasim: MetadataToken2022 needs ProgramToken2022")
	}
	if st.mintAuthority, err = parseOptKey("MintAuthority", t.MintAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	if st.freezeAuthority, err = parseOptKey("FreezeAuthority", t.FreezeAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	if st.updateAuthority, err = parseOptKey("UpdateAuthority", t.UpdateAuthority); err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	hs, err := newHolderSet(mint, t.Program, t.Supply, t.Holders)
	if err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	tok := &simToken{state: st, holders: hs, history: []pastState{{from: 0, state: st}}}
	pda, _, err := findProgramAddress([][]byte{[]byte("metadata"), metadataProgramKey[:], mint[:]}, metadataProgramKey)
	if err != nil {
		return fmt.Errorf("solanasim: metadata address: %w", err)
	}
	tok.metaPDA = pda
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.tokens[mint]; ok {
		delete(s.byMeta, old.metaPDA)
	}
	s.tokens[mint] = tok
	if !s.hasDefault {
		s.defaultMint, s.hasDefault = mint, true
	}
	if t.Metadata == MetadataMetaplex {
		s.byMeta[pda] = tok
	}
	return nil
}

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
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		return "", errors.New("solanasim: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(listenHost(host), strconv.Itoa(port)))
	if err != nil {
		return "", fmt.Errorf("solanasim: listen: %w", err)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	s.srv, s.done = srv, done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-done:
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server started by Start and waits for it to end. It is
// safe to call more than once.
func (s *Server) Close() error {
	s.srvMu.Lock()
	srv, done := s.srv, s.done
	s.srvMu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	s.sockets.closeAll()
	<-done
	return err
}

// Truth returns the exact ground truth of mint's holder set now (the
// generated set's computed once, in one pass of bounded memory, corrected
// by the holder changes made since), and false when mint is unknown.
func (s *Server) Truth(mint string) (Truth, bool) {
	v, ok := s.holdersOf(mint)
	if !ok {
		return Truth{}, false
	}
	return v.truth(), true
}

// Largest returns mint's 20 largest token accounts, largest first.
func (s *Server) Largest(mint string) ([]BalanceEntry, bool) {
	v, ok := s.holdersOf(mint)
	if !ok {
		return nil, false
	}
	return append([]BalanceEntry(nil), v.largest()...), true
}

// holdersOf is mint's holder set now.
func (s *Server) holdersOf(mint string) (holderView, bool) {
	k, err := parsePubkey(mint)
	if err != nil {
		return holderView{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	tok, ok := s.tokens[k]
	if !ok {
		return holderView{}, false
	}
	return holdersNow(tok), true
}

func (s *Server) token(mint string) *simToken {
	k, err := parsePubkey(mint)
	if err != nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tokens[k]
}

func (s *Server) update(mint string, f func(*mintState) error) error {
	k, err := parsePubkey(mint)
	if err != nil {
		return fmt.Errorf("solanasim: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[k]
	if !ok {
		return fmt.Errorf("solanasim: unknown mint %s", mint)
	}
	if err := f(&tok.state); err != nil {
		return err
	}
	// A change is a transaction: it lands in a slot after the one the
	// ledger was at, as on a real ledger, where an account has one state
	// per slot and subscribers are notified once per slot.
	tok.remember(s.slot.Add(1))
	s.signal()
	return nil
}

// Supply is mint's supply in base units now, and false when mint is
// unknown.
func (s *Server) Supply(mint string) (uint64, bool) {
	k, err := parsePubkey(mint)
	if err != nil {
		return 0, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	tok, ok := s.tokens[k]
	if !ok {
		return 0, false
	}
	return tok.state.supply, true
}

// SetSupply changes mint's supply (the holder set is unchanged).
func (s *Server) SetSupply(mint string, supply uint64) error {
	return s.update(mint, func(m *mintState) error { m.supply = supply; return nil })
}

// SetMintAuthority sets mint's mint authority ("" disables it).
func (s *Server) SetMintAuthority(mint, authority string) error {
	return s.update(mint, func(m *mintState) error {
		k, err := parseOptKey("mint authority", authority)
		if err == nil {
			m.mintAuthority = k
		}
		return err
	})
}

// SetFreezeAuthority sets mint's freeze authority ("" disables it).
func (s *Server) SetFreezeAuthority(mint, authority string) error {
	return s.update(mint, func(m *mintState) error {
		k, err := parseOptKey("freeze authority", authority)
		if err == nil {
			m.freezeAuthority = k
		}
		return err
	})
}

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

// BumpSlot advances the slot by n and returns the new slot.
func (s *Server) BumpSlot(n uint64) uint64 {
	slot := s.slot.Add(n)
	s.signal()
	return slot
}

// Slot returns the current (processed) slot.
func (s *Server) Slot() uint64 { return s.slot.Load() }

// listenHost is host, or 127.0.0.1 when empty: the simulator serves
// loopback unless told otherwise (a pod of a demo cluster listens on all).
func listenHost(host string) string {
	if host == "" {
		return "127.0.0.1"
	}
	return host
}
