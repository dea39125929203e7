// Package events is the edge's stream of changes (GET /api/events): one
// event per published change of a domain's answer, formatted once as
// server-sent-event bytes and shared by every subscriber. It knows
// nothing of HTTP: the server (services/edge/serve) writes what a
// subscriber's cursor hands it, and the edge's wiring offers the hub the
// bodies of each view the mirror publishes.
//
// An event's id is its data's time: the updated_at of the document the
// answer was rendered from, in milliseconds since the Unix epoch, raised
// where needed to stay above the id before it. Every replica reads the
// same documents, so the same change has the same id on every replica,
// and a client that reconnects to another one (a drain, a stream's
// maximum age) resumes with Last-Event-ID where it left off.
//
// The status event is the replica's own verdict, which no document
// dates: it takes the id of the last figure's event before it (0 before
// any), so that it never moves the figures' ids (a replica whose verdict
// changed at another moment would otherwise give the next figure another
// id than its peers do, and a client resuming there would be sent a
// figure again, or miss one), and a client's Last-Event-ID stays a
// position among the figures. A resumed stream starts with the replica's
// current status unless a newer one is among the events it resumes with:
// the verdict the client had may be another replica's.
//
// The hub keeps the last Buffer events. A client whose Last-Event-ID is
// older than the oldest event it still holds (evicted ones) gets the
// current value of every event name instead, so that nothing is lost: the
// bodies are whole answers, not differences.
package events

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Event names, one per answer the stream carries.
const (
	NameSupply  = "supply"
	NamePrice   = "price"
	NameMarket  = "market"
	NameHolders = "holders"
	NameStatus  = "status"
)

// Names are the event names, in the order a snapshot sends them when
// their ids tie.
var Names = []string{NameSupply, NamePrice, NameMarket, NameHolders, NameStatus}

// Event is one change, formatted once.
type Event struct {
	// ID is the event's id (see the package comment).
	ID uint64
	// Name is one of Names.
	Name string
	// Data is the answer's body, as the matching endpoint serves it.
	Data []byte
	// At is when the hub published it (fan-out latency).
	At time.Time
	// wire is the event as the stream sends it: id, event and data lines.
	wire []byte
	// end is the total bytes of the hub's events up to this one: a
	// subscriber's unsent bytes are the difference of two ends.
	end uint64
	seq uint64
}

// Wire is the event as the stream sends it.
func (e *Event) Wire() []byte { return e.wire }

// Offer is one answer the hub is offered: the body of an event name in
// the current view, and the time its data dates from.
type Offer struct {
	Name string
	// Body is the answer's body; nil when the domain has no data (no
	// event: the stream carries figures, and /api/status says why one is
	// missing).
	Body []byte
	// DataTime dates the body: the document's updated_at. Status has
	// none (see the package comment) and goes after the figures offered
	// with it.
	DataTime time.Time
}

// Options size the hub.
type Options struct {
	// Buffer is how many events the hub keeps for clients that resume.
	Buffer int
	Now    func() time.Time
}

// Hub holds the current event of each name, the last Buffer events, and
// wakes subscribers when one is published.
type Hub struct {
	buffer int
	now    func() time.Time

	mu sync.RWMutex
	// ring holds the last events in publication order; ring[0] has
	// sequence number first.
	ring  []*Event
	first uint64
	// evictedID is the largest id of an event no longer in the ring: a
	// client that has not seen it must start from a snapshot.
	evictedID uint64
	evicted   bool
	// lastID is the id of the last figure's event (status excluded).
	lastID  uint64
	lastEnd uint64
	// pubStart is where the last publication's events begin (lastEnd
	// before it): the bound on unsent bytes counts up to there.
	pubStart uint64
	current  map[string]*Event
	// wake is closed when an event is published (and replaced), or when
	// the hub closes.
	wake   chan struct{}
	closed bool
	done   chan struct{}
}

// New builds an empty hub.
func New(o Options) *Hub {
	if o.Buffer < 1 {
		o.Buffer = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Hub{buffer: o.Buffer, now: o.Now, current: map[string]*Event{}, wake: make(chan struct{}), done: make(chan struct{})}
}

// Publish offers the hub the current answers: every offer whose body
// differs from its name's current event becomes an event, in the order
// of their data times, status last. It returns the events it published.
func (h *Hub) Publish(offers ...Offer) []*Event {
	slices.SortStableFunc(offers, func(a, b Offer) int {
		if sa, sb := a.Name == NameStatus, b.Name == NameStatus; sa != sb {
			if sa {
				return 1
			}
			return -1
		}
		return a.DataTime.Compare(b.DataTime)
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	var out []*Event
	at, start := h.now(), h.lastEnd
	for _, o := range offers {
		if o.Body == nil {
			continue
		}
		if cur := h.current[o.Name]; cur != nil && string(cur.Data) == string(o.Body) {
			continue
		}
		id := h.lastID
		if o.Name != NameStatus {
			id = max(uint64(max(o.DataTime.UnixMilli(), 0)), h.lastID+1)
			h.lastID = id
		}
		e := &Event{ID: id, Name: o.Name, Data: o.Body, At: at, seq: h.first + uint64(len(h.ring))}
		e.wire = format(id, o.Name, o.Body)
		h.lastEnd += uint64(len(e.wire))
		e.end = h.lastEnd
		h.current[o.Name] = e
		h.ring = append(h.ring, e)
		if len(h.ring) > h.buffer {
			old := h.ring[0]
			h.evictedID, h.evicted = old.ID, true
			h.ring[0] = nil
			h.ring = h.ring[1:]
			h.first++
		}
		out = append(out, e)
	}
	if len(out) > 0 {
		h.pubStart = start
		close(h.wake)
		h.wake = make(chan struct{})
	}
	return out
}

// format is an event as the stream sends it. A body's lines each become a
// data line (the answers are one line of JSON; a line break would split
// nothing the client joins back).
func format(id uint64, name string, body []byte) []byte {
	b := make([]byte, 0, len(body)+len(name)+40)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	b = append(b, '\n')
	for {
		i := slices.Index(body, '\n')
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, body...)
			break
		}
		b = append(b, body[:i]...)
		b = append(b, '\n')
		body = body[i+1:]
	}
	return append(b, "\n\n"...)
}

// Cursor is a subscriber's place in the hub: the sequence number of the
// next event it has to send.
type Cursor struct {
	next uint64
	// sentEnd is the end of the last event sent (unsent bytes).
	sentEnd uint64
}

// ErrClosed is returned once the hub is closed (the edge shuts down).
var ErrClosed = errors.New("events: the stream is closing")

// ErrBehind is returned to a subscriber that fell out of the buffer, or
// whose unsent events passed its bound.
var ErrBehind = errors.New("events: the subscriber fell behind")

// Subscribe starts a subscriber. lastID is the client's Last-Event-ID
// ("" for none). first are the events to send at once: for a new client
// the current event of every name; for a client that resumes, the events
// after lastID, after the current status unless one of them is a status,
// or every current event when lastID is older than what the hub still
// holds.
func (h *Hub) Subscribe(lastID string) (first []*Event, cur Cursor, resumed bool, err error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, Cursor{}, false, ErrClosed
	}
	cur = Cursor{next: h.first + uint64(len(h.ring)), sentEnd: h.lastEnd}
	id, perr := strconv.ParseUint(lastID, 10, 64)
	if lastID != "" && perr == nil && (!h.evicted || id >= h.evictedID) {
		status := false
		for _, e := range h.ring {
			if e.ID > id {
				first = append(first, e)
				status = status || e.Name == NameStatus
			}
		}
		if st := h.current[NameStatus]; st != nil && !status {
			first = append([]*Event{st}, first...)
		}
		return first, cur, true, nil
	}
	for _, e := range h.current {
		first = append(first, e)
	}
	slices.SortFunc(first, func(a, b *Event) int {
		if a.ID != b.ID {
			return compare(a.ID, b.ID)
		}
		return slices.Index(Names, a.Name) - slices.Index(Names, b.Name)
	})
	return first, cur, false, nil
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Next returns the events published since cur, advances cur past them,
// and returns the channel closed at the next publication. maxPending
// bounds the bytes a subscriber may have left unsent when it asks (0: no
// bound), counted up to the last publication: a subscriber that had
// taken everything before it is never behind, however large that one
// publication (a whole view at once, the first one after the edge
// started, or every domain back after an outage). Past the bound, or when
// the events it needs left the buffer, Next returns ErrBehind.
func (h *Hub) Next(cur *Cursor, maxPending uint64) ([]*Event, <-chan struct{}, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, nil, ErrClosed
	}
	if cur.next < h.first {
		return nil, nil, ErrBehind
	}
	if maxPending > 0 && h.pubStart > cur.sentEnd && h.pubStart-cur.sentEnd > maxPending {
		return nil, nil, ErrBehind
	}
	evs := h.ring[cur.next-h.first:]
	if len(evs) > 0 {
		evs = slices.Clip(evs)
		cur.next += uint64(len(evs))
		cur.sentEnd = evs[len(evs)-1].end
	}
	return evs, h.wake, nil
}

// Watch returns the number of events published so far and the channel
// closed at the next publication; ErrClosed once the hub is closed. A
// writer of many subscribers compares the count with the one it last
// served, so that a publication while it wrote is not missed.
func (h *Hub) Watch() (uint64, <-chan struct{}, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return 0, nil, ErrClosed
	}
	return h.first + uint64(len(h.ring)), h.wake, nil
}

// Pending is how many bytes of events the subscriber at cur has not been
// handed yet.
func (h *Hub) Pending(cur Cursor) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.lastEnd - cur.sentEnd
}

// Current is the current event of each name that has one.
func (h *Hub) Current() map[string]*Event {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]*Event, len(h.current))
	for k, v := range h.current {
		out[k] = v
	}
	return out
}

// Done is closed when the hub closes.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Close ends every stream: subscribers waiting are woken and get
// ErrClosed; new ones are refused. It is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.wake)
	close(h.done)
}
