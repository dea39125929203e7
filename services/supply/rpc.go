package supply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// RPC method names, used as metric labels.
const (
	methodGetTokenSupply = "getTokenSupply"
	methodGetAccountInfo = "getAccountInfo"
)

// maxResponseBytes bounds one RPC answer: a mint or metadata account is a
// few hundred bytes, so anything near this is not an answer to trust.
const maxResponseBytes = 4 << 20

// outcomeCanceled labels calls cut short by the collector stopping.
const outcomeCanceled = "canceled"

// callObs is what the HTTP layer saw of one RPC call: solana-go's errors
// quote the URL and hide the HTTP status behind a JSON-RPC error when the
// body parses, so the classification relies on this instead.
type callObs struct {
	status       int
	header       http.Header
	transportErr bool
	bodyErr      bool
	tooLarge     bool
}

type obsKey struct{}

// observingClient is the HTTP client handed to solana-go: it records the
// status, headers and body failures of each call in its callObs.
type observingClient struct{ c *http.Client }

// Do sends req and wraps the body so that read failures are recorded.
func (o *observingClient) Do(req *http.Request) (*http.Response, error) {
	obs, _ := req.Context().Value(obsKey{}).(*callObs)
	resp, err := o.c.Do(req)
	if obs == nil {
		return resp, err
	}
	if err != nil {
		obs.transportErr = true
		return nil, err
	}
	obs.status, obs.header = resp.StatusCode, resp.Header
	resp.Body = &observedBody{rc: resp.Body, obs: obs, left: maxResponseBytes}
	return resp, nil
}

// CloseIdleConnections closes the keep-alive connections.
func (o *observingClient) CloseIdleConnections() { o.c.CloseIdleConnections() }

var errTooLarge = errors.New("response body too large")

// observedBody records read errors other than EOF (a truncated body) and
// stops reading past a size limit.
type observedBody struct {
	rc   io.ReadCloser
	obs  *callObs
	left int64
}

func (b *observedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.obs.tooLarge = true
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		b.obs.bodyErr = true
	}
	return n, err
}

// Close drains what the JSON decoder left (a trailing newline), so that
// the connection can be reused, then closes the body.
func (b *observedBody) Close() error {
	_, _ = io.Copy(io.Discard, io.LimitReader(b.rc, 64<<10))
	return b.rc.Close()
}

// ledger reads the Solana RPC through solana-go, observing and
// classifying every call.
type ledger struct {
	cl         *rpc.Client
	http       *observingClient
	metrics    *collector.Metrics
	log        *slog.Logger
	timeout    time.Duration
	commitment rpc.CommitmentType
	secret     config.Secret
	// node is the node's number, 1..N in configuration order.
	node int
}

func newLedger(node int, url config.Secret, base *http.Client, cfg Config, m *collector.Metrics, log *slog.Logger) *ledger {
	if base == nil {
		base = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
			ForceAttemptHTTP2:   true,
		}}
	}
	oc := &observingClient{c: base}
	return &ledger{
		cl:         rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(url.Reveal(), &jsonrpc.RPCClientOpts{HTTPClient: oc})),
		http:       oc,
		metrics:    m,
		log:        log,
		timeout:    cfg.RPCTimeout,
		commitment: rpc.CommitmentType(cfg.Commitment),
		secret:     url,
		node:       node,
	}
}

// codeMinContextSlot is the JSON-RPC error of a node whose ledger is
// behind the minContextSlot of the request: "Minimum context slot has not
// been reached", with data {"contextSlot": N}.
const codeMinContextSlot = -32016

// outcomeBehind labels calls answered from a slot before the one required.
const outcomeBehind = "behind"

// behindError is an answer discarded because the node's ledger is behind
// the slot of the figure last published: the node is lagging, not down.
type behindError struct {
	method string
	// slot is the node's context slot, when it said (0: unknown).
	slot, min uint64
}

func (e *behindError) Error() string {
	if e.slot == 0 {
		return fmt.Sprintf("%s: the node has not reached slot %d", e.method, e.min)
	}
	return fmt.Sprintf("%s: the node is at slot %d, before slot %d", e.method, e.slot, e.min)
}

// contextSlotOf reads data.contextSlot of a -32016 error (0 when absent).
func contextSlotOf(re *jsonrpc.RPCError) uint64 {
	m, ok := re.Data.(map[string]any)
	if !ok {
		return 0
	}
	switch v := m["contextSlot"].(type) {
	case float64:
		if v > 0 && v < 1<<53 {
			return uint64(v)
		}
	case json.Number:
		if n, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
			return n
		}
	}
	return 0
}

// minSlotOpt is the minContextSlot of a read: nil when nothing was
// published yet.
func minSlotOpt(min uint64) *uint64 {
	if min == 0 {
		return nil
	}
	return &min
}

// call runs one RPC call with the per-call timeout, observes it and
// returns nil, rpc.ErrNotFound (an account that does not exist), the
// context's error when the collector stops, or a *collector.Error.
func (l *ledger) call(ctx context.Context, method string, f func(ctx context.Context) error) error {
	obs := &callObs{}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, obsKey{}, obs), l.timeout)
	defer cancel()
	start := time.Now()
	err := f(cctx)
	dur := time.Since(start)
	if err == nil || errors.Is(err, rpc.ErrNotFound) {
		l.metrics.ObserveUpstream(contract.UpstreamSolanaRPC, method, "ok", dur)
		return err
	}
	if ctx.Err() != nil {
		l.metrics.ObserveUpstream(contract.UpstreamSolanaRPC, method, outcomeCanceled, dur)
		return ctx.Err()
	}
	if re := (*jsonrpc.RPCError)(nil); errors.As(err, &re) && re.Code == codeMinContextSlot {
		l.metrics.ObserveUpstream(contract.UpstreamSolanaRPC, method, outcomeBehind, dur)
		return &behindError{method: method, slot: contextSlotOf(re)}
	}
	ce := l.classify(method, err, obs, cctx.Err() != nil)
	l.metrics.ObserveUpstream(contract.UpstreamSolanaRPC, method, ce.Kind, dur)
	detail := config.Redact(err.Error(), l.secret)
	var re *jsonrpc.RPCError
	if errors.As(err, &re) { // its Error() is a multi-line dump
		detail = fmt.Sprintf("JSON-RPC error %d: %s", re.Code, config.Redact(re.Message, l.secret))
	}
	l.log.Debug("rpc call failed", "method", method, "kind", ce.Kind, "error", collector.Clip(detail))
	return ce
}

// rpcVariable is the variable of the supply collector's endpoint, named
// in its remedies.
const rpcVariable = "SOLANA_RPC_URL"

// classify turns a failed call into a collector error whose message is
// ours (never solana-go's, which quotes the URL), with the remedy of the
// shared classification (collector.RemedyFor).
func (l *ledger) classify(method string, err error, obs *callObs, timedOut bool) *collector.Error {
	up := contract.UpstreamSolanaRPC
	switch {
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return collector.Unreachable(method, rpcVariable, l.secret, err, true, l.timeout, "SUPPLY_RPC_TIMEOUT")
	case obs.transportErr:
		return collector.Unreachable(method, rpcVariable, l.secret, err, false, l.timeout, "SUPPLY_RPC_TIMEOUT")
	case obs.status != 0 && (obs.status < 200 || obs.status > 299):
		e := collector.ClassifyHTTP(up, &http.Response{StatusCode: obs.status, Header: obs.header})
		e.Message = method + ": " + e.Message
		if e.Kind == contract.ErrKindForbidden {
			e.Remedy = ""
		}
		return e.WithRemedy(rpcVariable)
	case obs.tooLarge:
		return collector.Errorf(contract.ErrKindInvalid, false, "%s answered %s with more than %d bytes", up, method, maxResponseBytes).WithRemedy(rpcVariable)
	case obs.bodyErr:
		return collector.Errorf(contract.ErrKindInvalid, true, "the answer of %s to %s was cut off", up, method).WithRemedy(rpcVariable)
	}
	var re *jsonrpc.RPCError
	if errors.As(err, &re) {
		return collector.ClassifyRPC(method, int64(re.Code), config.Redact(re.Message, l.secret), rpcVariable)
	}
	return collector.Errorf(contract.ErrKindInvalid, true, "%s answered %s with a body that is not a valid JSON-RPC response", up, method).WithRemedy(rpcVariable)
}

// tokenSupply is the answer of getTokenSupply.
type tokenSupply struct {
	Amount   string
	Decimals uint8
	Slot     uint64
}

// getTokenSupply reads the supply. The method takes a commitment only (no
// minContextSlot), so an answer from a slot before min is discarded here.
func (l *ledger) getTokenSupply(ctx context.Context, mint solana.PublicKey, min uint64) (tokenSupply, error) {
	var res *rpc.GetTokenSupplyResult
	err := l.call(ctx, methodGetTokenSupply, func(ctx context.Context) error {
		var err error
		res, err = l.cl.GetTokenSupply(ctx, mint, l.commitment)
		return err
	})
	if err != nil {
		return tokenSupply{}, err
	}
	if res == nil || res.Value == nil {
		return tokenSupply{}, collector.Errorf(contract.ErrKindInvalid, false, "%s answered %s without a value", contract.UpstreamSolanaRPC, methodGetTokenSupply)
	}
	if res.Context.Slot != 0 && res.Context.Slot < min {
		return tokenSupply{}, &behindError{method: methodGetTokenSupply, slot: res.Context.Slot, min: min}
	}
	return tokenSupply{Amount: res.Value.Amount, Decimals: res.Value.Decimals, Slot: res.Context.Slot}, nil
}

// account is an account as getAccountInfo returns it (base64).
type account struct {
	Owner string
	Data  []byte
	Slot  uint64
}

// getAccount returns the account, or found false when it does not exist,
// as of slot min or after (minContextSlot; 0: any slot).
func (l *ledger) getAccount(ctx context.Context, addr solana.PublicKey, min uint64) (acc account, found bool, err error) {
	var res *rpc.GetAccountInfoResult
	err = l.call(ctx, methodGetAccountInfo, func(ctx context.Context) error {
		var err error
		res, err = l.cl.GetAccountInfoWithOpts(ctx, addr, &rpc.GetAccountInfoOpts{
			Encoding: solana.EncodingBase64, Commitment: l.commitment, MinContextSlot: minSlotOpt(min),
		})
		return err
	})
	var be *behindError
	if errors.As(err, &be) {
		be.min = min
	}
	switch {
	case errors.Is(err, rpc.ErrNotFound):
		return account{}, false, nil
	case err != nil:
		return account{}, false, err
	}
	if res.Value.Data == nil {
		return account{}, false, collector.Errorf(contract.ErrKindInvalid, false, "%s answered %s of %s without data", contract.UpstreamSolanaRPC, methodGetAccountInfo, addr)
	}
	return account{Owner: res.Value.Owner.String(), Data: res.Value.Data.GetBinary(), Slot: res.Context.Slot}, true, nil
}

// close releases idle connections.
func (l *ledger) close() { l.http.CloseIdleConnections() }

// invalidf is an invalid_response error, not retried: a node that answers
// nonsense once is likely to answer it again within the same poll.
func invalidf(format string, a ...any) *collector.Error {
	return (&collector.Error{Kind: contract.ErrKindInvalid, Message: fmt.Sprintf(format, a...)}).WithRemedy(rpcVariable)
}
