// Package sse reads a server-sent-event stream as the HTML standard's
// EventSource does (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// fields id, event, data and retry, comments, CRLF, LF or CR line ends.
// Tests and benchmarks read /api/events with it.
package sse

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
)

// Event is one dispatched event. Name is "message" when the stream named
// none; ID is the last event id seen, as EventSource keeps it.
type Event struct {
	ID, Name, Data string
}

// Reader reads events from a stream.
type Reader struct {
	r *bufio.Reader
	// LastID is the last event id (what a reconnection sends as
	// Last-Event-ID).
	LastID string
	// Retry is the last retry field, in milliseconds (-1: none).
	Retry int
	// Comments counts comment lines (heartbeats).
	Comments int
}

// NewReader reads the stream r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10), Retry: -1} }

// Next returns the next dispatched event, or the read error (io.EOF when
// the stream ended). An event not closed by a blank line is never
// dispatched, as EventSource drops it.
func (r *Reader) Next() (Event, error) {
	var data bytes.Buffer
	var name string
	hasData := false
	for {
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		if line == "" {
			if !hasData {
				name = ""
				continue
			}
			d := data.Bytes()
			d = bytes.TrimSuffix(d, []byte("\n"))
			if name == "" {
				name = "message"
			}
			return Event{ID: r.LastID, Name: name, Data: string(d)}, nil
		}
		if strings.HasPrefix(line, ":") {
			r.Comments++
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				r.LastID = value
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil && n >= 0 {
				r.Retry = n
			}
		}
	}
}

// line reads one line without its end (CRLF, LF or CR).
func (r *Reader) line() (string, error) {
	var b strings.Builder
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if n, err := r.r.Peek(1); err == nil && n[0] == '\n' {
				_, _ = r.r.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}
