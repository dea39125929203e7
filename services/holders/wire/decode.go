package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// sliceLen is the dataSlice every query asks for: the owner (32 bytes at
// offset 32 of an SPL token account) and the amount (u64 little-endian at
// offset 64).
const (
	sliceOffset = 32
	sliceLen    = 40
)

// RPCError is a JSON-RPC error object found in a response.
type RPCError struct {
	Code    int64
	Message string
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// progressEvery is how many accounts pass between two progress calls.
const progressEvery = 1 << 14

// DecodeProgramAccounts reads one getProgramAccounts JSON-RPC response
// from r, a stream, and adds every account to c without holding the
// response: accounts must carry base64 data of exactly 40 bytes (dataSlice
// offset 32, length 40: owner then amount). The result may be the plain
// array or the withContext form, whose slot is returned (0 otherwise).
//
// progress, when set, is called with the number of accounts decoded so
// far every few thousand accounts.
//
// The accounts are added to c on a goroutine of its own, in batches (see
// counter); c is complete when DecodeProgramAccounts returns, and its
// outcome is that of adding the accounts in order here.
//
// A JSON-RPC error object is returned as *RPCError. A stream that ends
// early, breaks, or is not valid JSON is an error, and then c holds a
// partial tally that the caller must discard.
func DecodeProgramAccounts(r io.Reader, c *tally.Count, progress func(accounts uint64)) (slot uint64, err error) {
	return decodeGPA(r, startCounter(c, nil), progress)
}

// DecodeProgramAccountsLive is DecodeProgramAccounts seeding l, a live
// tally, instead of a Count: each account's address (pubkey) is kept
// too. A response that names an account twice is an error.
func DecodeProgramAccountsLive(r io.Reader, l *tally.Live, progress func(accounts uint64)) (slot uint64, err error) {
	return decodeGPA(r, startCounter(nil, l), progress)
}

// decodeGPA reads one getProgramAccounts response into k, the counting
// of a Count or the seeding of a Live.
func decodeGPA(r io.Reader, k *counter, progress func(accounts uint64)) (slot uint64, err error) {
	s := newScanner(r)
	d := gpaDecoder{s: s, k: k, progress: progress}
	defer func() { err = d.k.finish(err) }()
	err = s.response(func() error {
		c, err := s.peek()
		if err != nil {
			return err
		}
		if c == '[' {
			return d.accounts()
		}
		return d.withContext(&slot)
	})
	return slot, err
}

// response parses the JSON-RPC response object, calling result on the
// "result" value. It fails unless exactly one of result or error is
// present, and unless the stream ends right after the object.
func (s *scanner) response(result func() error) error {
	more, err := s.open('{', '}')
	var (
		gotResult bool
		rpcErr    *RPCError
	)
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return err
		}
		switch string(k) {
		case "result":
			if gotResult {
				return s.syntax(`"result" twice`)
			}
			gotResult = true
			if err = result(); err != nil {
				return err
			}
		case "error":
			if rpcErr, err = s.errorObject(); err != nil {
				return err
			}
		default:
			if err = s.skip(); err != nil {
				return err
			}
		}
		more, err = s.next('}')
	}
	if err != nil {
		return err
	}
	if err := s.atEOF(); err != nil {
		return err
	}
	switch {
	case rpcErr != nil:
		return rpcErr
	case !gotResult:
		return s.syntax("a JSON-RPC response without result or error")
	}
	return nil
}

// maxNodeMessage bounds the message of a node's error that is kept.
const maxNodeMessage = 300

// clipMessage keeps at most maxNodeMessage bytes of a node's message, cut
// back to a space: a cut inside a word could leave a piece of an API key
// that redaction, which runs later, no longer recognises.
func clipMessage(m []byte) string {
	if len(m) <= maxNodeMessage {
		return string(m)
	}
	m = m[:maxNodeMessage]
	m = m[:max(bytes.LastIndexByte(m, ' '), 0)]
	return string(m) + "…"
}

// errorObject parses a JSON-RPC error object,
// {"code":…,"message":…,"data":…}.
func (s *scanner) errorObject() (*RPCError, error) {
	e := &RPCError{}
	var gotCode bool
	more, err := s.open('{', '}')
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return nil, err
		}
		switch string(k) {
		case "code":
			e.Code, err = s.int()
			gotCode = true
		case "message":
			// A node's message may run to megabytes: keep what
			// clipMessage keeps and skip the rest unread.
			var m []byte
			if m, err = s.strPrefix(maxNodeMessage + 1); err == nil {
				e.Message = clipMessage(m)
			}
		default:
			err = s.skip()
		}
		if err != nil {
			return nil, err
		}
		more, err = s.next('}')
	}
	if err != nil {
		return nil, err
	}
	if !gotCode {
		return nil, s.syntax("a JSON-RPC error without code")
	}
	return e, nil
}

// maxAccountInfo bounds a getAccountInfo answer: a few hundred bytes, or
// a node's error message of a few MiB.
const maxAccountInfo = 16 << 20

// DecodeAccountOwner reads a getAccountInfo response and returns the
// account's owner program, or exists false when the account does not
// exist. A JSON-RPC error object is an *RPCError with its message clipped;
// at most 16 MiB are read, in a fixed window.
func DecodeAccountOwner(r io.Reader) (owner string, exists bool, err error) {
	s := newScanner(io.LimitReader(r, maxAccountInfo))
	err = s.response(func() error {
		more, err := s.open('{', '}')
		gotValue := false
		for more && err == nil {
			var k []byte
			if k, err = s.key(); err != nil {
				return err
			}
			if string(k) != "value" {
				err = s.skip()
			} else if gotValue = true; s.peekIs('n') {
				err = s.literal("null")
			} else {
				owner, err = s.accountOwner()
				exists = err == nil
			}
			if err != nil {
				return err
			}
			more, err = s.next('}')
		}
		if err == nil && !gotValue {
			return s.syntax("a result without value")
		}
		return err
	})
	if err != nil {
		return "", false, err
	}
	return owner, exists, nil
}

// peekIs reports whether the next byte after whitespace is c.
func (s *scanner) peekIs(c byte) bool {
	got, err := s.peek()
	return err == nil && got == c
}

// accountOwner parses an account object and returns its "owner".
func (s *scanner) accountOwner() (string, error) {
	var owner []byte
	more, err := s.open('{', '}')
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return "", err
		}
		if string(k) == "owner" {
			var o []byte
			if o, err = s.str(); err == nil {
				owner = append(owner[:0], o...)
			}
		} else {
			err = s.skip()
		}
		if err != nil {
			return "", err
		}
		more, err = s.next('}')
	}
	if err != nil {
		return "", err
	}
	if owner == nil {
		return "", s.syntax("an account without owner")
	}
	return string(owner), nil
}

type gpaDecoder struct {
	s        *scanner
	k        *counter
	n        uint64 // accounts decoded
	progress func(uint64)
	raw      [48]byte
}

// withContext parses {"context":{"slot":…},"value":[…]}.
func (d *gpaDecoder) withContext(slot *uint64) error {
	s := d.s
	more, err := s.open('{', '}')
	gotValue := false
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return err
		}
		switch string(k) {
		case "context":
			err = d.context(slot)
		case "value":
			gotValue = true
			err = d.accounts()
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
		more, err = s.next('}')
	}
	if err == nil && !gotValue {
		return s.syntax("a result without value")
	}
	return err
}

func (d *gpaDecoder) context(slot *uint64) error {
	s := d.s
	more, err := s.open('{', '}')
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return err
		}
		if string(k) == "slot" {
			*slot, err = s.uint()
		} else {
			err = s.skip()
		}
		if err != nil {
			return err
		}
		more, err = s.next('}')
	}
	return err
}

// accounts parses the array of keyed accounts.
func (d *gpaDecoder) accounts() error {
	s := d.s
	more, err := s.open('[', ']')
	for more && err == nil {
		if err = d.keyedAccount(); err != nil {
			return err
		}
		if d.progress != nil && d.n%progressEvery == 0 {
			d.progress(d.n)
		}
		more, err = s.next(']')
	}
	return err
}

// keyedAccount parses {"pubkey":…,"account":{…}} and adds it to the count.
func (d *gpaDecoder) keyedAccount() error {
	s := d.s
	var (
		account tally.Owner
		owner   tally.Owner
		amount  uint64
		gotData bool
		gotKey  bool
	)
	more, err := s.open('{', '}')
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return err
		}
		switch string(k) {
		case "pubkey":
			gotKey = true
			if d.k.l == nil {
				err = s.skipString()
			} else {
				err = d.pubkey(&account)
			}
		case "account":
			gotData, err = d.account(&owner, &amount)
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
		more, err = s.next('}')
	}
	switch {
	case err != nil:
		return err
	case !gotKey:
		return s.syntax("an account without pubkey")
	case !gotData:
		return s.syntax("an account without data")
	}
	d.n++
	return d.k.add(&account, &owner, amount)
}

// pubkey parses a base58 address into a.
func (d *gpaDecoder) pubkey(a *tally.Owner) error {
	b, err := d.s.str()
	if err != nil {
		return err
	}
	if err := DecodeAddress(b, a); err != nil {
		return d.s.syntax("pubkey: %v", err)
	}
	return nil
}

// account parses the account object; only "data" is kept.
func (d *gpaDecoder) account(owner *tally.Owner, amount *uint64) (bool, error) {
	s := d.s
	got := false
	more, err := s.open('{', '}')
	for more && err == nil {
		var k []byte
		if k, err = s.key(); err != nil {
			return false, err
		}
		if string(k) == "data" {
			err = d.data(owner, amount)
			got = true
		} else {
			err = s.skip()
		}
		if err != nil {
			return false, err
		}
		more, err = s.next('}')
	}
	return got, err
}

// data parses ["<base64>","base64"] into the owner and the amount.
func (d *gpaDecoder) data(owner *tally.Owner, amount *uint64) error {
	s := d.s
	if err := s.expect('['); err != nil {
		return err
	}
	b64, err := s.str()
	if err != nil {
		return err
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > len(d.raw) {
		return s.syntax("account data of %d base64 characters, want 40 bytes (dataSlice offset 32, length 40)", len(b64))
	}
	n, err := base64.StdEncoding.Decode(d.raw[:], b64)
	if err != nil {
		return s.syntax("account data is not base64")
	}
	if n != sliceLen {
		return s.syntax("account data of %d bytes, want 40 (dataSlice offset 32, length 40)", n)
	}
	if err := s.expect(','); err != nil {
		return err
	}
	enc, err := s.str()
	if err != nil {
		return err
	}
	if string(enc) != "base64" {
		return s.syntax("account data encoded as %q, want base64", enc[:min(len(enc), 32)])
	}
	if err := s.expect(']'); err != nil {
		return err
	}
	copy(owner[:], d.raw[:32])
	*amount = binary.LittleEndian.Uint64(d.raw[32:40])
	return nil
}
