package wire

// The scanner's numbers, literals and skipping of whole values.

import (
	"encoding/binary"
	"errors"
	"io"
)

// uint reads a JSON number that must be a non-negative integer of u64.
func (s *scanner) uint() (uint64, error) {
	if _, err := s.peek(); err != nil {
		return 0, err
	}
	var v uint64
	digits := 0
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c < '0' || c > '9' {
				return s.endUint(v, digits, c)
			}
			if digits == 1 && v == 0 {
				return 0, s.syntax("number with a leading zero")
			}
			d := uint64(c - '0')
			if v > (^uint64(0)-d)/10 {
				return 0, s.syntax("integer above 2^64-1")
			}
			v = v*10 + d
			digits++
			s.pos++
		}
		if !s.more() {
			if digits > 0 && errors.Is(s.err, io.EOF) {
				return v, nil // the caller finds the truncation next
			}
			return 0, s.fail()
		}
	}
}

func (s *scanner) endUint(v uint64, digits int, c byte) (uint64, error) {
	switch {
	case digits == 0:
		return 0, s.syntax("want a non-negative integer, found %q", c)
	case c == '.' || c == 'e' || c == 'E':
		return 0, s.syntax("want an integer, found a fraction or exponent")
	}
	return v, nil
}

// int reads a JSON integer of i64 range (JSON-RPC error codes).
func (s *scanner) int() (int64, error) {
	c, err := s.peek()
	if err != nil {
		return 0, err
	}
	neg := c == '-'
	if neg {
		s.pos++
	}
	u, err := s.uint()
	if err != nil {
		return 0, err
	}
	if u > 1<<62 {
		return 0, s.syntax("integer out of range")
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// skipNumber consumes a JSON number, checking its grammar.
func (s *scanner) skipNumber() error {
	// The usual number of an account (lamports, rentEpoch, space) is an
	// integer without sign or leading zero, whole in the window: its
	// digits, then a byte that ends it.
	if i := s.pos; i < s.end && s.buf[i] >= '1' && s.buf[i] <= '9' {
		for i++; i < s.end && s.buf[i] >= '0' && s.buf[i] <= '9'; i++ {
		}
		if i < s.end && s.buf[i] != '.' && s.buf[i] != 'e' && s.buf[i] != 'E' {
			s.pos = i
			return nil
		}
	}
	// states: 0 start, 1 after '-', 2 int digits (leading 0 -> 3),
	// 4 after '.', 5 frac digits, 6 after e, 7 after e sign, 8 exp digits.
	state := 0
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			isDigit := c >= '0' && c <= '9'
			switch {
			case state == 0 && c == '-':
				state = 1
			case (state == 0 || state == 1) && c == '0':
				state = 3
			case (state == 0 || state == 1 || state == 2) && isDigit:
				state = 2
			case (state == 2 || state == 3) && c == '.':
				state = 4
			case (state == 4 || state == 5) && isDigit:
				state = 5
			case (state == 2 || state == 3 || state == 5) && (c == 'e' || c == 'E'):
				state = 6
			case state == 6 && (c == '+' || c == '-'):
				state = 7
			case (state == 6 || state == 7 || state == 8) && isDigit:
				state = 8
			default:
				if state == 2 || state == 3 || state == 5 || state == 8 {
					return nil
				}
				return s.syntax("invalid number")
			}
			s.pos++
		}
		if !s.more() {
			if (state == 2 || state == 3 || state == 5 || state == 8) && errors.Is(s.err, io.EOF) {
				return nil
			}
			return s.fail()
		}
	}
}

// literal consumes true, false or null.
func (s *scanner) literal(word string) error {
	if err := s.need(len(word)); err != nil {
		return err
	}
	if string(s.buf[s.pos:s.pos+len(word)]) != word {
		return s.syntax("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// skip consumes any JSON value, checking its grammar.
func (s *scanner) skip() error { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) error {
	if depth > maxDepth {
		return s.syntax("nesting deeper than %d", maxDepth)
	}
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		return s.skipString()
	case c == '{':
		more, err := s.open('{', '}')
		for more && err == nil {
			if err = s.skipString(); err != nil {
				return err
			}
			if err = s.expect(':'); err != nil {
				return err
			}
			if err = s.skipDepth(depth + 1); err != nil {
				return err
			}
			more, err = s.next('}')
		}
		return err
	case c == '[':
		more, err := s.open('[', ']')
		for more && err == nil {
			if err = s.skipDepth(depth + 1); err != nil {
				return err
			}
			more, err = s.next(']')
		}
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.skipNumber()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax("unexpected %q", c)
}

// hasControl reports a byte below 0x20, which JSON strings may not hold.
// It tests eight bytes at a time (every string of an account is checked:
// its keys, base64 data, owner and pubkey): a byte below 0x20 is one whose
// subtraction of 0x20 borrows while its high bit is clear, exactly.
func hasControl(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
