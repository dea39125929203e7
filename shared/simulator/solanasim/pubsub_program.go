package solanasim

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/simulator/fault"
	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
)

// programSubscribe, as a node serves it:
//
//	→ {"jsonrpc":"2.0","id":1,"method":"programSubscribe","params":["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",{"commitment":"confirmed","encoding":"base64","filters":[{"memcmp":{"offset":0,"bytes":"<mint>"}},{"dataSize":165}]}]}
//	← {"jsonrpc":"2.0","result":24040,"id":1}
//	← {"jsonrpc":"2.0","method":"programNotification","params":{"result":{"context":{"slot":5208469},"value":{"pubkey":"…","account":{"lamports":2039280,"data":["…","base64"],"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","executable":false,"rentEpoch":18446744073709551615,"space":165}}},"subscription":24040}}
//	→ {"jsonrpc":"2.0","id":2,"method":"programUnsubscribe","params":[24040]}
//	← {"jsonrpc":"2.0","result":true,"id":2}
//
// The config is getProgramAccounts' (commitment, encoding, dataSlice,
// filters; withContext, sortResults and minContextSlot are accepted and
// change nothing), and the filters are validated by the same code, so the
// errors are the same: -32602 for a bad filter, more than 4 of them, an
// unknown encoding or commitment or field. The filters are checked before
// the program, whose error is the node's PubSub one ("Invalid Request:
// Invalid pubkey provided"). As on a node, no enumeration stands behind a
// subscription, so any program is accepted, token programs without the
// mint filter included. Encodings: base64, base58 and the legacy binary
// (the default), whose data is the node's "error: data too large for bs58
// encoding" for more than 128 bytes after dataSlice; jsonParsed is refused
// as by getProgramAccounts (the simulator does not render parsed token
// accounts), base64+zstd as everywhere in the simulator.
//
// One notification is sent per account that a slot changed and that is
// the program's and matches every filter in the state the slot left it
// in, by slot; nothing is sent at subscribe time. A closed token account
// is handed back to the system program with no data, so a subscription to
// the token program is not told of it, as on a node. Changes come from the
// holder changes (ledger/holderedits.go); a lagging node's socket tells
// each one when its slot reaches it. As accountSubscribe, the notification is sent
// at the change and its context slot is the change's slot minus the
// commitment's lag, as getProgramAccounts' context slot is: a snapshot
// taken at context slot C holds exactly the changes notified at a slot up
// to C. NodeHide does not hide accounts from notifications (they come from
// the slot's writes, not from the index).

// RouteProgramNotification is the fault route of the notifications of
// program subscriptions: fault.Lost (with Times) drops that many of them
// without a word, the socket kept open.
const RouteProgramNotification = "programNotification"

// programSub is one programSubscribe.
type programSub struct {
	program ledger.Key
	filters []filter
	enc     string
	slice   *dataSlice
	lag     uint64 // the commitment's
	next    uint64 // the first slot whose changes are not notified yet
}

// errDropped is refusal's answer when the fault dropped the socket.
var errDropped = &rpcError{Code: CodeInternalError, Message: "socket dropped"}

// refusal applies the server's fault of route method (Faults, as for the
// HTTP methods): a protocol kind is the node's error for the request
// (rpc_method_not_found is a node that does not serve the method, as
// agave answers a subscription it was started without), reset drops the
// socket, latency delays the answer; the other kinds do not apply.
func (c *socket) refusal(method string) *rpcError {
	f, ok := c.srv.faults.Take(method)
	if !ok {
		return nil
	}
	switch f.Kind {
	case fault.Reset:
		c.drop()
		return errDropped
	case fault.Latency:
		time.Sleep(f.Delay)
		return nil
	}
	return c.srv.protocolFault(c.req, method, f.Kind)
}

func (c *socket) programSubscribe(params json.RawMessage) (uint64, *rpcError) {
	ps, e := positional(params, 1, 2)
	if e != nil {
		return 0, e
	}
	var programStr string
	if json.Unmarshal(ps[0], &programStr) != nil {
		return 0, invalidParams("Invalid params: invalid type: expected a string.")
	}
	var cfg programAccountsConfig
	if e := decodeConfig(ps, 1, &cfg); e != nil {
		return 0, e
	}
	if e := checkEncoding(cfg.Encoding); e != nil {
		return 0, e
	}
	fs, e := parseFilters(cfg.Filters)
	if e != nil {
		return 0, e
	}
	b, err := base58.Decode(programStr)
	if err != nil || len(b) != 32 {
		return 0, invalidParams("Invalid Request: Invalid pubkey provided")
	}
	var program ledger.Key
	copy(program[:], b)
	if cfg.Encoding == "jsonParsed" {
		return 0, invalidParams("Invalid params: jsonParsed is not supported by this simulator for programSubscribe; use base64.")
	}
	lag, e := commitmentLag(cfg.Commitment)
	if e != nil {
		return 0, e
	}
	// The slot the subscription starts after, read where no change is
	// half made (under the ledger's lock).
	now := c.srv.ledger.Slot()
	sub := &programSub{program: program, filters: fs, enc: cfg.Encoding, slice: cfg.DataSlice, lag: lag}
	sub.next = now - min(c.seen().lag, now) + 1
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.subs)+len(c.psubs) >= maxSubsPerSocket {
		return 0, invalidParams("Invalid params: too many subscriptions on this connection")
	}
	id := c.srv.nextSub.Add(1)
	c.psubs[id] = sub
	return id, nil
}

// notifyPrograms sends a programNotification for each account changed in
// the slots each program subscription has not seen yet.
func (c *socket) notifyPrograms() {
	lag := c.seen().lag
	var (
		out [][]byte
		raw [ledger.TokenAccountLen + 5]byte
	)
	c.mu.Lock()
	for id, sub := range c.psubs {
		changes, to := c.srv.ledger.ProgramChanges(sub.program, sub.next, lag)
		sub.next = max(sub.next, to+1)
		for _, ch := range changes {
			if ch.Closed {
				continue // the system program's now
			}
			data := ch.Data(raw[:])
			if !matchAll(sub.filters, data) {
				continue
			}
			if f, ok := c.srv.faults.Take(RouteProgramNotification); ok && f.Kind == fault.Lost {
				continue // lost without a word: only a resync can tell
			}
			slot := ch.Slot
			if slot > sub.lag {
				slot -= sub.lag
			}
			out = append(out, programNotification(id, slot, &ch.Account.Address, data, sub))
		}
	}
	c.mu.Unlock()
	for _, msg := range out {
		c.send(msg)
	}
}

// matchAll reports whether data passes every filter.
func matchAll(fs []filter, data []byte) bool {
	for k := range fs {
		if !fs[k].match(data) {
			return false
		}
	}
	return true
}

const base58TooLarge = "error: data too large for bs58 encoding"

// programNotification is the message telling subscription id of the
// account at address in slot.
func programNotification(id, slot uint64, address *ledger.Key, data []byte, sub *programSub) []byte {
	msg := make([]byte, 0, 512)
	msg = append(msg, `{"jsonrpc":"2.0","method":"programNotification","params":{"result":{"context":{"slot":`...)
	msg = strconv.AppendUint(msg, slot, 10)
	msg = append(msg, `},"value":`...)
	msg = appendKeyedHead(msg, address, len(data))
	sliced := sub.slice.apply(data)
	switch sub.enc {
	case "", "binary":
		msg = append(msg, '"')
		if len(sliced) > maxBase58Bytes {
			msg = append(msg, base58TooLarge...)
		} else {
			msg = append(msg, base58.Encode(sliced)...)
		}
		msg = append(msg, '"')
	case "base58":
		msg = append(msg, `["`...)
		if len(sliced) > maxBase58Bytes {
			msg = append(msg, base58TooLarge...)
		} else {
			msg = append(msg, base58.Encode(sliced)...)
		}
		msg = append(msg, `","base58"]`...)
	default: // base64
		msg = append(msg, `["`...)
		msg = base64.StdEncoding.AppendEncode(msg, sliced)
		msg = append(msg, `","base64"]`...)
	}
	msg = appendKeyedTail(msg, sub.program.String(), len(data))
	msg = append(msg, `},"subscription":`...)
	msg = strconv.AppendUint(msg, id, 10)
	return append(msg, "}}"...)
}
