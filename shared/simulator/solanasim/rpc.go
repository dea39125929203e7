package solanasim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/simulator/fault"
)

// JSON-RPC error codes used by the simulator (the node's real codes).
const (
	CodeParseError          = -32700
	CodeInvalidRequest      = -32600
	CodeMethodNotFound      = -32601
	CodeInvalidParams       = -32602
	CodeNodeUnhealthy       = -32005
	CodeKeyExcludedFromIdx  = -32010
	CodeMinContextSlotNotOK = -32016
	CodeKeyNotAllowed       = -32052
)

const maxBodyBytes = 1 << 20

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func invalidParams(msg string) *rpcError {
	return &rpcError{Code: CodeInvalidParams, Message: msg}
}

// resultFunc writes one JSON value, the "result" of a response.
type resultFunc func(o *out) error

// call is one parsed request of a (possibly batched) HTTP request.
type call struct {
	id     json.RawMessage // nil: the id was absent, answer with null
	method string
	params json.RawMessage
	err    *rpcError // set when the request itself is invalid
	fault  *fault.Fault
}

type methodFunc func(s *Server, ctx context.Context, params json.RawMessage) (resultFunc, *rpcError)

var methods map[string]methodFunc

func init() {
	methods = map[string]methodFunc{
		"getHealth":               (*Server).getHealth,
		"getSlot":                 (*Server).getSlot,
		"getVersion":              (*Server).getVersion,
		"getLatestBlockhash":      (*Server).getLatestBlockhash,
		"getTokenSupply":          (*Server).getTokenSupply,
		"getAccountInfo":          (*Server).getAccountInfo,
		"getTokenLargestAccounts": (*Server).getTokenLargestAccounts,
		"getProgramAccounts":      (*Server).getProgramAccounts,
		"getTokenAccounts":        (*Server).getTokenAccounts,
	}
}

// serveHTTP reads the JSON-RPC request(s), applies faults, and answers.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ControlPrefix) {
		s.serveControl(w, r)
		return
	}
	if isUpgrade(r) {
		v := viewOf(r.Context())
		s.servePubSub(w, r, &s.sockets, func() view { return v }, nil)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return // the client went away
	}
	if len(body) > maxBodyBytes {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	calls, batch := parseBody(body)

	if !batch {
		c := calls[0]
		final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if f, ok := fault.FromContext(r.Context()); ok {
				c.fault = &f
			}
			s.respond(w, r, calls, false)
		})
		var h http.Handler = final
		if c.err == nil {
			h = s.faults.Middleware(c.method, h)
		}
		s.faults.Middleware("*", h).ServeHTTP(w, r)
		return
	}

	// A batch: protocol faults apply to their own element; the first generic
	// fault (status, reset, truncation...) applies to the whole response.
	var generic *fault.Fault
	var delay time.Duration
	for _, c := range calls {
		if c.err != nil {
			continue
		}
		f, ok := s.faults.Take(c.method)
		if !ok {
			continue
		}
		if isGeneric(f.Kind) {
			if generic == nil {
				generic = &f
			}
			continue
		}
		c.fault = &f
		delay = max(delay, f.Delay)
	}
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		s.respond(w, r, calls, true)
	})
	var h http.Handler = final
	if generic != nil {
		one := fault.NewSet()
		one.Inject("batch", *generic)
		h = one.Middleware("batch", h)
	}
	s.faults.Middleware("*", h).ServeHTTP(w, r)
}

func isGeneric(k fault.Kind) bool {
	switch k {
	case fault.Latency, fault.HTTP403, fault.HTTP429, fault.HTTP500, fault.HTTP503,
		fault.Reset, fault.Truncate, fault.Malformed:
		return true
	}
	return false
}

// parseBody splits the body into calls; batch reports a JSON array.
func parseBody(body []byte) ([]*call, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return []*call{{err: &rpcError{Code: CodeParseError, Message: "Parse error"}}}, false
		}
		if len(raws) == 0 {
			return []*call{{err: &rpcError{Code: CodeInvalidRequest, Message: "Invalid request"}}}, false
		}
		calls := make([]*call, len(raws))
		for i, raw := range raws {
			calls[i] = parseCall(raw)
		}
		return calls, true
	}
	if !json.Valid(trimmed) {
		return []*call{{err: &rpcError{Code: CodeParseError, Message: "Parse error"}}}, false
	}
	return []*call{parseCall(trimmed)}, false
}

func parseCall(raw json.RawMessage) *call {
	var req struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	c := &call{}
	if err := json.Unmarshal(raw, &req); err != nil {
		c.err = &rpcError{Code: CodeInvalidRequest, Message: "Invalid request"}
		return c
	}
	if validID(req.ID) {
		c.id = req.ID
	}
	if req.JSONRPC == nil || *req.JSONRPC != "2.0" || req.Method == nil || !validID(req.ID) && req.ID != nil {
		c.err = &rpcError{Code: CodeInvalidRequest, Message: "Invalid request"}
		return c
	}
	c.method, c.params = *req.Method, req.Params
	return c
}

// validID accepts the JSON-RPC id types: number, string or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// out is the response writer: buffered, optionally gzipped, flushable.
type out struct {
	*bufio.Writer
	gz      *gzip.Writer
	flusher http.Flusher
	ctx     context.Context
}

// flush pushes everything written so far to the client.
func (o *out) flush() error {
	if err := o.Flush(); err != nil {
		return err
	}
	if o.gz != nil {
		if err := o.gz.Flush(); err != nil {
			return err
		}
	}
	if o.flusher != nil {
		o.flusher.Flush()
	}
	return o.ctx.Err()
}

func (o *out) json(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = o.Write(b)
	return err
}

// respond runs the calls and writes their responses (an array for a batch).
func (s *Server) respond(w http.ResponseWriter, r *http.Request, calls []*call, batch bool) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	var dst io.Writer = w
	o := &out{ctx: r.Context()}
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		o.gz = gzip.NewWriter(w)
		dst = o.gz
	}
	o.Writer = bufio.NewWriterSize(dst, 32<<10)
	o.flusher, _ = w.(http.Flusher)
	if batch {
		_ = o.WriteByte('[')
	}
	for i, c := range calls {
		if i > 0 {
			_ = o.WriteByte(',')
		}
		if err := s.answer(r, o, c); err != nil {
			// The client went away or the stream failed mid-way: stop, and
			// let net/http drop the connection so the body is not complete.
			panic(http.ErrAbortHandler)
		}
	}
	if batch {
		_ = o.WriteByte(']')
	}
	if err := o.Flush(); err != nil {
		return
	}
	if o.gz != nil {
		_ = o.gz.Close()
	}
}

// answer writes one response object.
func (s *Server) answer(r *http.Request, o *out, c *call) error {
	rerr := c.err
	var res resultFunc
	if rerr == nil && c.fault != nil {
		rerr = s.protocolFault(r, c.method, c.fault.Kind)
		if rerr == nil && c.fault.Kind == fault.EndlessStream {
			res, rerr = s.endless(r.Context(), c.method, c.params)
		}
	}
	if rerr == nil && res == nil {
		m, ok := methods[c.method]
		if !ok {
			rerr = &rpcError{Code: CodeMethodNotFound, Message: "Method not found"}
		} else {
			res, rerr = m(s, r.Context(), c.params)
		}
	}
	_, _ = o.WriteString(`{"jsonrpc":"2.0",`)
	if rerr != nil {
		_, _ = o.WriteString(`"error":`)
		if err := o.json(rerr); err != nil {
			return err
		}
	} else {
		_, _ = o.WriteString(`"result":`)
		if err := res(o); err != nil {
			return err
		}
	}
	_, _ = o.WriteString(`,"id":`)
	if c.id == nil {
		_, _ = o.WriteString("null")
	} else {
		_, _ = o.Write(c.id)
	}
	return o.WriteByte('}')
}

// protocolFault turns an injected protocol fault into the node's error.
func (s *Server) protocolFault(r *http.Request, method string, k fault.Kind) *rpcError {
	switch k {
	case fault.RPCNodeUnhealthy:
		return s.unhealthyError()
	case fault.RPCExcludedIndex:
		return excludedError(TokenProgramID)
	case fault.RPCMethodNotFound:
		return &rpcError{Code: CodeMethodNotFound, Message: "Method not found"}
	case fault.RPCInvalidParams:
		return invalidParams("Invalid params: invalid type: injected fault for " + method)
	case fault.RPCKeyEcho:
		return keyEchoError(r, method)
	case fault.HugeError:
		return hugeError()
	}
	return nil // a fault meant for another simulator: ignore it
}

// keyEchoError refuses the caller's API key and quotes it three ways: bare,
// URL-encoded, and inside URLs (the request's own, as the node received
// it, and a dashboard link).
func keyEchoError(r *http.Request, method string) *rpcError {
	key := callerKey(r)
	return &rpcError{Code: CodeKeyNotAllowed, Message: fmt.Sprintf(
		"api key %s is not allowed to access blockchain (key %s, request http://%s%s, manage it at https://dashboard.rpc.invalid/keys/%s/%s?plan=free)",
		key, url.QueryEscape(key), r.Host, r.URL.RequestURI(), url.PathEscape(key), method)}
}

// callerKey is the API key a request carries where providers take it: the
// query parameter api-key, api_key, apikey, key or token, else the
// longest path segment ("/v2/<key>", "/<key>/"); "" when there is none.
func callerKey(r *http.Request) string {
	q := r.URL.Query()
	for _, name := range []string{"api-key", "api_key", "apikey", "key", "token"} {
		if v := q.Get(name); v != "" {
			return v
		}
	}
	var key string
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if len(seg) > len(key) {
			key = seg
		}
	}
	return key
}

func (s *Server) unhealthyError() *rpcError {
	type data struct {
		NumSlotsBehind *uint64 `json:"numSlotsBehind"`
	}
	n := s.slotsBehind.Load()
	if n == 0 {
		return &rpcError{Code: CodeNodeUnhealthy, Message: "Node is unhealthy", Data: data{}}
	}
	return &rpcError{Code: CodeNodeUnhealthy, Message: "Node is behind by " + strconv.FormatUint(n, 10) + " slots", Data: data{&n}}
}

func excludedError(program string) *rpcError {
	return &rpcError{Code: CodeKeyExcludedFromIdx, Message: program + " excluded from account secondary indexes; this RPC method unavailable for key"}
}

// Serves reports whether route is one of the simulated node's routes of
// Faults: a JSON-RPC method over HTTP, a PubSub subscription, whose
// request takes the route's fault too (see socket.refusal), or a PubSub
// notification (RouteAccountNotification, RouteProgramNotification: the
// lost and latency kinds).
func Serves(route string) bool {
	_, ok := methods[route]
	switch route {
	case "accountSubscribe", "programSubscribe", RouteAccountNotification, RouteProgramNotification:
		return true
	}
	return ok
}
