package holders

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// JSON-RPC error codes the collector treats specially.
const (
	codeMethodNotFound    = -32601
	codeInvalidParams     = -32602
	codeInternal          = -32603
	codeNodeUnhealthy     = -32005
	codeExcludedFromIndex = -32010
	codeMinContextSlot    = -32016
)

// Remedy is what the status record says when the node cannot enumerate.
const (
	RemedyGPA = "use an RPC node that indexes token accounts by mint (secondary indexes), " +
		"or set HOLDERS_METHOD=das with a Helius DAS endpoint in HOLDERS_RPC_URL"
	RemedyDAS = "set HOLDERS_RPC_URL to an endpoint that serves the DAS method getTokenAccounts (Helius), " +
		"or set HOLDERS_METHOD=getProgramAccounts with an RPC node that indexes token accounts by mint"
	RemedyTooLarge = "if the token really has that many accounts, raise HOLDERS_MAX_ACCOUNTS and HOLDERS_MAX_MEMORY_BYTES " +
		"(about 43 bytes a holder) and the collector's memory limit; if not, the RPC node lists accounts without end: " +
		"use another node, or HOLDERS_METHOD=das with a DAS endpoint"
)

// rpcClient posts JSON-RPC requests to one endpoint. Its errors never
// quote the endpoint (it may carry an API key).
type rpcClient struct {
	url string
	// variable names the endpoint's variable in messages and remedies
	// (HOLDERS_RPC_URL, or SOLANA_RPC_URL when that one is unset).
	variable string
	secret   config.Secret
	http     *http.Client
	gzip     bool
	timeout  time.Duration
	metrics  *collector.Metrics
}

// request is one JSON-RPC call.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// call posts method with params and hands the (decompressed) body to read.
// HTTP and transport failures, and read's errors, come back classified.
func (c *rpcClient) call(ctx context.Context, method string, params any, read func(io.Reader) error) (err error) {
	started := time.Now()
	defer func() {
		outcome := "ok"
		if err != nil {
			outcome = collector.Classify(err).Kind
		}
		c.metrics.ObserveUpstream(contract.UpstreamSolanaRPC, method, outcome, time.Since(started))
	}()
	body, err := json.Marshal(request{JSONRPC: "2.0", ID: 1, Method: method, Params: params})
	if err != nil {
		return collector.Errorf(contract.ErrKindInternal, false, "encoding the %s request: %v", method, err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return collector.Errorf(contract.ErrKindConfig, false, "%s: not a usable URL", c.variable)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.gzip {
		// Set by hand, so the transport leaves the body compressed and the
		// decoder reads it through one gzip reader of bounded memory.
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, method, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if e := classifyStatus(method, resp, c.variable); e != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return e
	}
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return collector.Errorf(contract.ErrKindInvalid, true, "%s: the gzip response ended before its header", method)
			}
			return collector.Errorf(contract.ErrKindInvalid, false, "%s: the response is not valid gzip", method)
		}
		defer func() { _ = zr.Close() }()
		r = zr
	}
	if err := read(r); err != nil {
		return classifyRead(ctx, method, err, c.variable)
	}
	return nil
}

// transportError classifies a failed round trip without quoting it: the
// error text of net/http carries the URL. It names the variable and the
// host (collector.Unreachable).
func (c *rpcClient) transportError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return collector.Unreachable(method, c.variable, c.secret, err, true, c.timeout, "HOLDERS_RPC_TIMEOUT")
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return collector.Unreachable(method, c.variable, c.secret, err, false, c.timeout, "HOLDERS_RPC_TIMEOUT")
}

// classifyStatus maps an HTTP status. 403 on an enumeration is the way
// many providers refuse getProgramAccounts of the token programs.
func classifyStatus(method string, resp *http.Response, variable string) *collector.Error {
	e := collector.ClassifyHTTP("the RPC node", resp)
	if e == nil {
		return nil
	}
	e.Message = method + ": " + e.Message
	if resp.StatusCode == http.StatusForbidden && method != "getAccountInfo" {
		e.Kind = contract.ErrKindUnsupported
		e.Remedy = remedyFor(method) + "; if the endpoint needs an API key, check it"
	}
	if e.Kind == contract.ErrKindForbidden {
		e.Remedy = ""
	}
	return e.WithRemedy(variable)
}

func remedyFor(method string) string {
	if method == methodDAS {
		return RemedyDAS
	}
	return RemedyGPA
}

// classifyRead maps an error met while reading the body.
func classifyRead(ctx context.Context, method string, err error, variable string) error {
	ce := classifyReadKind(ctx, method, err, variable)
	var c *collector.Error
	if errors.As(ce, &c) {
		_ = c.WithRemedy(variable) // sets c.Remedy in place
	}
	return ce
}

// classifyReadKind is classifyRead before the remedy of the kind.
func classifyReadKind(ctx context.Context, method string, err error, variable string) error {
	var (
		rpcErr *wire.RPCError
		synErr *wire.SyntaxError
		stErr  *wire.StreamError
		ce     *collector.Error
		limErr *tally.LimitError
	)
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &limErr):
		return tooLarge(method, limErr)
	case errors.As(err, &rpcErr):
		return classifyRPC(method, rpcErr, variable)
	case errors.Is(err, wire.ErrTruncated):
		return collector.Errorf(contract.ErrKindInvalid, true, "%s: %v; no partial count is kept", method, err)
	case errors.As(err, &synErr):
		return collector.Errorf(contract.ErrKindInvalid, false, "%s: %v", method, synErr)
	case errors.As(err, &stErr):
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return collector.Errorf(contract.ErrKindUnavailable, true, "%s timed out while streaming (HOLDERS_RPC_TIMEOUT); no partial count is kept", method)
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		var gz bool
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) {
			gz = true
		}
		if gz {
			return collector.Errorf(contract.ErrKindInvalid, true, "%s: the gzip stream is corrupt; no partial count is kept", method)
		}
		return collector.Errorf(contract.ErrKindUnavailable, true, "%s: the stream broke before its end; no partial count is kept", method)
	}
	return collector.Errorf(contract.ErrKindInvalid, false, "%s: unreadable response", method)
}

// tooLarge is the error of an enumeration that met a ceiling of Config.
func tooLarge(method string, e *tally.LimitError) *collector.Error {
	msg := fmt.Sprintf("%s: the node listed more than %d token accounts (HOLDERS_MAX_ACCOUNTS)", method, e.MaxAccounts)
	if e.MaxAccounts == 0 {
		msg = fmt.Sprintf("%s: the owner set would pass %d MiB (HOLDERS_MAX_MEMORY_BYTES) at %d holders of %d token accounts",
			method, e.MaxBytes>>20, e.Holders, e.Accounts)
	}
	return &collector.Error{Kind: contract.ErrKindTooLarge, Message: msg + "; no partial count is kept", Remedy: RemedyTooLarge}
}

// classifyRPC maps a JSON-RPC error object with the shared
// classification (collector.ClassifyRPC); a node that refuses to
// enumerate (no secondary index, method not found, 403) is
// enumeration_unsupported, with the remedy of the method.
func classifyRPC(method string, e *wire.RPCError, variable string) *collector.Error {
	ce := collector.ClassifyRPC(method, e.Code, e.Message, variable)
	switch {
	case e.Code == codeMinContextSlot:
		// Behind the count last published: discarded, not an outage.
		ce.Kind, ce.Retry, ce.Remedy = contract.ErrKindBehind, true, "wait for the node to catch up; one that stays behind should be replaced in "+variable
		ce.Message = method + ": the node has not reached the slot of the holders count last published; that count stays"
	case e.Code == codeExcludedFromIndex, e.Code == codeMethodNotFound && method != methodAccountInfo,
		e.Code == 403 && method != methodAccountInfo:
		ce.Kind, ce.Retry, ce.Remedy = contract.ErrKindUnsupported, false, remedyFor(method)
		ce.Message += " (it cannot enumerate the token's accounts)"
	}
	return ce
}
