package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// scanBufSize is the scanner's window over the stream. A string the
// decoder keeps (a key, an account's data, an error message) must fit in
// it; strings it skips may be of any length.
const scanBufSize = 64 << 10

// maxDepth bounds the nesting of skipped values.
const maxDepth = 64

// ErrTruncated is returned, wrapped, when the stream ends before the JSON
// value does.
var ErrTruncated = errors.New("the response ended before its JSON was complete")

// SyntaxError is an invalid JSON byte (or a JSON value of the wrong shape)
// at Offset of the decompressed stream.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// StreamError is a failure to read the stream itself (connection reset,
// gzip corruption, context cancelled): the decoder never saw the end.
type StreamError struct{ err error }

func (e *StreamError) Error() string { return "reading the response failed: " + e.err.Error() }
func (e *StreamError) Unwrap() error { return e.err }

// scanner is an incremental JSON tokenizer over an io.Reader with a fixed
// window: it never holds more than scanBufSize bytes of the stream, and
// allocates nothing per value on the paths the decoder uses.
type scanner struct {
	r       io.Reader
	buf     []byte
	pos     int   // next unread byte
	end     int   // end of valid data
	off     int64 // stream offset of buf[0]
	err     error // sticky read error (io.EOF at the end)
	scratch []byte
	keyBuf  []byte
}

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, scanBufSize), scratch: make([]byte, 0, 256)}
}

// more moves the unread bytes to the front of the window and reads more.
// It reports whether at least one new byte arrived.
func (s *scanner) more() bool {
	if s.err != nil {
		return false
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:s.end])
		s.off += int64(s.pos)
		s.end, s.pos = n, 0
	}
	if s.end == len(s.buf) {
		s.err = &SyntaxError{Offset: s.off, Msg: fmt.Sprintf("a value the decoder keeps is longer than %d bytes", len(s.buf))}
		return false
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	s.err = io.ErrNoProgress
	return false
}

// fail returns the error for a stream that stopped where a byte was needed.
func (s *scanner) fail() error {
	var se *SyntaxError
	switch {
	case errors.As(s.err, &se):
		return s.err
	case s.err == nil || errors.Is(s.err, io.EOF):
		return fmt.Errorf("%w (after %d bytes)", ErrTruncated, s.off+int64(s.end))
	}
	return &StreamError{err: s.err}
}

func (s *scanner) syntax(format string, a ...any) error {
	return &SyntaxError{Offset: s.off + int64(s.pos), Msg: fmt.Sprintf(format, a...)}
}

// peek skips whitespace and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				return c, nil
			}
			s.pos++
		}
		if !s.more() {
			return 0, s.fail()
		}
	}
}

// expect consumes c (after whitespace) or fails.
func (s *scanner) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.syntax("want %q, found %q", c, got)
	}
	s.pos++
	return nil
}

// atEOF reports whether only whitespace remains.
func (s *scanner) atEOF() error {
	c, err := s.peek()
	if err == nil {
		return s.syntax("unexpected %q after the end of the response", c)
	}
	if errors.Is(err, ErrTruncated) {
		return nil
	}
	return err
}

// next consumes a ',' (true) or the closing byte close (false).
func (s *scanner) next(close byte) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	switch c {
	case ',':
		s.pos++
		return true, nil
	case close:
		s.pos++
		return false, nil
	}
	return false, s.syntax("want ',' or %q, found %q", close, c)
}

// open consumes open ('{' or '[') and reports whether the container has a
// first element (false: it was empty and is consumed).
func (s *scanner) open(open, close byte) (bool, error) {
	if err := s.expect(open); err != nil {
		return false, err
	}
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == close {
		s.pos++
		return false, nil
	}
	return true, nil
}

// key reads an object key and its ':'. The slice is valid until the next
// call on the scanner.
func (s *scanner) key() ([]byte, error) {
	k, err := s.str()
	if err != nil {
		return nil, err
	}
	if s.pos < s.end && s.buf[s.pos] == ':' {
		s.pos++
		return k, nil
	}
	// Reading on may move the window under k: keep a copy.
	s.keyBuf = append(s.keyBuf[:0], k...)
	if err := s.expect(':'); err != nil {
		return nil, err
	}
	return s.keyBuf, nil
}

// str reads a string value whole into the window (unescaped when it has
// escapes). The slice is valid until the next call on the scanner.
func (s *scanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	k := 0 // bytes of the string seen so far, from s.pos
	for {
		i := bytes.IndexByte(s.buf[s.pos+k:s.end], '"')
		if i >= 0 {
			raw := s.buf[s.pos : s.pos+k+i]
			if bytes.IndexByte(raw, '\\') < 0 {
				if hasControl(raw) {
					return nil, s.syntax("control character in a string")
				}
				s.pos += k + i + 1
				return raw, nil
			}
			// An escaped quote may end the span early: unescape, which
			// also finds the real end.
			out, done, err := s.unescape(scanBufSize + 1)
			if err == nil && !done {
				err = s.syntax("a value the decoder keeps is longer than %d bytes", scanBufSize)
			}
			return out, err
		}
		k = s.end - s.pos
		if !s.more() {
			return nil, s.fail()
		}
	}
}

// strPrefix reads a string value of any length and returns its first n
// bytes or a little more (unescaped; a multi-byte character may be cut);
// the rest is skipped unread. The slice is valid until the next call on
// the scanner.
func (s *scanner) strPrefix(n int) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	out, done, err := s.unescape(n)
	if err == nil && !done {
		err = s.skipStringBody()
	}
	return out, err
}

// unescape decodes the string starting at s.pos (after its quote) into
// scratch, reading more as needed, until its closing quote (done) or
// until limit bytes are decoded (the rest is left unread).
func (s *scanner) unescape(limit int) (out []byte, done bool, err error) {
	out = s.scratch[:0]
	for len(out) < limit {
		if s.pos >= s.end && !s.more() {
			return nil, false, s.fail()
		}
		c := s.buf[s.pos]
		switch {
		case c == '"':
			s.pos++
			s.scratch = out
			return out, true, nil
		case c < 0x20:
			return nil, false, s.syntax("control character in a string")
		case c != '\\':
			out = append(out, c)
			s.pos++
			continue
		}
		if err := s.need(2); err != nil {
			return nil, false, err
		}
		e := s.buf[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := s.hex4()
			if err != nil {
				return nil, false, err
			}
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
				if s.need(6) == nil && s.buf[s.pos] == '\\' && s.buf[s.pos+1] == 'u' {
					s.pos += 2
					r2, err := s.hex4()
					if err != nil {
						return nil, false, err
					}
					r = utf16.DecodeRune(r, r2)
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false, s.syntax("invalid escape \\%c", e)
		}
	}
	s.scratch = out
	return out, false, nil
}

// need makes sure n bytes are in the window from s.pos.
func (s *scanner) need(n int) error {
	for s.end-s.pos < n {
		if !s.more() {
			return s.fail()
		}
	}
	return nil
}

func (s *scanner) hex4() (rune, error) {
	if err := s.need(4); err != nil {
		return 0, err
	}
	var r rune
	for _, c := range s.buf[s.pos : s.pos+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, s.syntax("invalid \\u escape")
		}
		r = r<<4 | rune(v)
	}
	s.pos += 4
	return r, nil
}

// skipString consumes a string of any length without keeping it.
func (s *scanner) skipString() error {
	if err := s.expect('"'); err != nil {
		return err
	}
	return s.skipStringBody()
}

// skipStringBody consumes the rest of a string whose opening quote is
// read.
func (s *scanner) skipStringBody() error {
	for {
		win := s.buf[s.pos:s.end]
		q := bytes.IndexByte(win, '"')
		var b int
		if q >= 0 {
			b = bytes.IndexByte(win[:q], '\\')
		} else {
			b = bytes.IndexByte(win, '\\')
		}
		span := q
		if b >= 0 && (q < 0 || b < q) {
			span = b
		} else if q < 0 {
			span = len(win)
		}
		if hasControl(win[:span]) {
			return s.syntax("control character in a string")
		}
		switch {
		case q >= 0 && (b < 0 || q < b):
			s.pos += q + 1
			return nil
		case b >= 0:
			s.pos += b
			if err := s.need(2); err != nil {
				return err
			}
			switch s.buf[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				s.pos += 2
				if _, err := s.hex4(); err != nil {
					return err
				}
			default:
				return s.syntax("invalid escape \\%c", s.buf[s.pos+1])
			}
		default:
			s.pos = s.end
			if !s.more() {
				return s.fail()
			}
		}
	}
}
