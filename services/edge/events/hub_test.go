package events

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func offer(name, body string, at time.Time) Offer {
	return Offer{Name: name, Body: []byte(body), DataTime: at}
}

func ids(evs []*Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestPublishOnlyChanges: an unchanged body makes no event; ids are the
// data time in ms, raised to stay increasing; offers go out in data-time
// order; a nil body (no data) makes none.
func TestPublishOnlyChanges(t *testing.T) {
	h := New(Options{Buffer: 8, Now: func() time.Time { return t0 }})
	evs := h.Publish(offer(NamePrice, `{"p":1}`, t0.Add(2*time.Millisecond)), offer(NameSupply, `{"s":1}`, t0),
		Offer{Name: NameHolders})
	if len(evs) != 2 || evs[0].Name != NameSupply || evs[1].Name != NamePrice {
		t.Fatalf("first publication: %v", evs)
	}
	if want := uint64(t0.UnixMilli()); evs[0].ID != want || evs[1].ID != want+2 {
		t.Errorf("ids %v, want the data times %d and %d", ids(evs), want, want+2)
	}
	if evs := h.Publish(offer(NamePrice, `{"p":1}`, t0.Add(time.Second))); len(evs) != 0 {
		t.Errorf("an unchanged body made events: %v", ids(evs))
	}
	// A body dated before the last id (a collector's clock behind) still
	// gets a greater id.
	evs = h.Publish(offer(NamePrice, `{"p":2}`, t0.Add(-time.Hour)))
	if len(evs) != 1 || evs[0].ID != uint64(t0.UnixMilli())+3 {
		t.Errorf("id of an event dated in the past: %v", ids(evs))
	}
}

// TestWireFormat: id, event, one data line per body line, blank line.
func TestWireFormat(t *testing.T) {
	h := New(Options{Buffer: 4})
	e := h.Publish(offer(NamePrice, "{\"a\":1}\n{\"b\":2}", time.UnixMilli(42)))[0]
	if got, want := string(e.Wire()), "id: 42\nevent: price\ndata: {\"a\":1}\ndata: {\"b\":2}\n\n"; got != want {
		t.Errorf("wire %q, want %q", got, want)
	}
}

// TestSubscribeResume: a new subscriber gets the current event of every
// name; one that resumes gets the events after its id; one whose id left
// the buffer gets the current ones again.
func TestSubscribeResume(t *testing.T) {
	h := New(Options{Buffer: 3})
	for i := range 5 {
		h.Publish(offer(NamePrice, "p"+strconv.Itoa(i), time.UnixMilli(int64(100+i))))
	}
	h.Publish(offer(NameSupply, "s", time.UnixMilli(50))) // id 105
	first, _, resumed, err := h.Subscribe("")
	if err != nil || resumed || len(first) != 2 || string(first[0].Data) != "p4" || first[1].ID != 105 {
		t.Fatalf("new subscriber: %v %v %v", first, resumed, err)
	}
	first, _, resumed, _ = h.Subscribe("102")
	if !resumed || !equal(ids(first), []uint64{103, 104, 105}) {
		t.Errorf("resume after 102: %v (resumed %v)", ids(first), resumed)
	}
	first, _, _, _ = h.Subscribe("105")
	if len(first) != 0 {
		t.Errorf("resume at the last id sent %v", ids(first))
	}
	first, _, resumed, _ = h.Subscribe("101") // 102 was evicted: unseen
	if resumed || !equal(ids(first), []uint64{104, 105}) {
		t.Errorf("resume after an evicted id: %v (resumed %v), want the current events", ids(first), resumed)
	}
	first, _, resumed, _ = h.Subscribe("not-a-number")
	if resumed || len(first) != 2 {
		t.Errorf("a garbled Last-Event-ID: %v (resumed %v)", ids(first), resumed)
	}
}

// TestNextAndBounds: Next hands each event once and wakes on the next
// publication; a subscriber past its bound of unsent bytes, or out of the
// buffer, gets ErrBehind; Close ends everyone.
func TestNextAndBounds(t *testing.T) {
	h := New(Options{Buffer: 4})
	_, cur, _, _ := h.Subscribe("")
	evs, wake, err := h.Next(&cur, 0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("nothing published: %v %v", evs, err)
	}
	h.Publish(offer(NamePrice, "a", time.UnixMilli(1)))
	select {
	case <-wake:
	default:
		t.Fatal("a publication did not wake the subscriber")
	}
	if evs, _, _ = h.Next(&cur, 0); len(evs) != 1 || string(evs[0].Data) != "a" {
		t.Fatalf("after a publication: %v", evs)
	}
	if evs, _, _ = h.Next(&cur, 0); len(evs) != 0 {
		t.Fatalf("an event handed twice: %v", evs)
	}
	slow := cur
	big := strings.Repeat("x", 1000)
	// One publication larger than the bound, to a subscriber that had
	// taken everything before it: not behind (a whole view at once).
	h.Publish(offer(NamePrice, big+"1", time.UnixMilli(2)), offer(NameMarket, big+"1", time.UnixMilli(2)))
	if evs, _, err := h.Next(&slow, 1500); err != nil || len(evs) != 2 {
		t.Fatalf("one publication of 2 KB past a bound of 1.5 KB, nothing older unsent: %d events, %v", len(evs), err)
	}
	slow = cur // 2 KB unsent from now on
	h.Publish(offer(NamePrice, big+"2", time.UnixMilli(3)))
	if _, _, err := h.Next(&slow, 1500); !errors.Is(err, ErrBehind) {
		t.Errorf("2 KB unsent before the last publication, past a bound of 1.5 KB: %v", err)
	}
	if evs, _, err := h.Next(&cur, 4096); err != nil || len(evs) != 3 {
		t.Errorf("within the bound: %d events, %v", len(evs), err)
	}
	for i := range 5 {
		h.Publish(offer(NamePrice, strconv.Itoa(i), time.UnixMilli(int64(10+i))))
	}
	slow = cur
	if _, _, err := h.Next(&slow, 0); !errors.Is(err, ErrBehind) {
		t.Errorf("a subscriber out of the buffer: %v", err)
	}
	_, cur, _, _ = h.Subscribe("")
	_, wake, _ = h.Next(&cur, 0)
	h.Close()
	<-wake
	if _, _, err := h.Next(&cur, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, _, _, err := h.Subscribe(""); !errors.Is(err, ErrClosed) {
		t.Errorf("subscribe after Close: %v", err)
	}
	h.Close() // idempotent
}

// TestStatusKeepsTheFiguresIDs: two replicas publish the same figures;
// one of them also saw its status verdict change between two of them, at
// a time after the next figure's data time. The figures get the same ids
// on both (a status event takes the id of the figure before it and
// raises nothing), and a client that read a status event last resumes on
// the other replica with exactly the figures it missed, after that
// replica's own status; on the same replica, after its current status.
func TestStatusKeepsTheFiguresIDs(t *testing.T) {
	a, b := New(Options{Buffer: 16}), New(Options{Buffer: 16})
	supply := offer(NameSupply, "s1", t0)
	price := offer(NamePrice, "p1", t0.Add(time.Second))
	later := offer(NamePrice, "p2", t0.Add(3*time.Second))
	a.Publish(supply)
	st := a.Publish(Offer{Name: NameStatus, Body: []byte("degraded"), DataTime: t0.Add(2 * time.Second)})
	pa := a.Publish(price)
	a.Publish(later)
	b.Publish(supply, Offer{Name: NameStatus, Body: []byte("ok")})
	pb := b.Publish(price)
	b.Publish(later)
	if ids(pa)[0] != ids(pb)[0] || a.Current()[NameSupply].ID != b.Current()[NameSupply].ID {
		t.Errorf("one price: id %v on one replica, %v on the other", ids(pa), ids(pb))
	}
	if len(st) != 1 || st[0].ID != uint64(t0.UnixMilli()) {
		t.Fatalf("status event %v, want the id of the supply before it, %d", ids(st), t0.UnixMilli())
	}
	first, _, resumed, err := b.Subscribe(strconv.FormatUint(st[0].ID, 10))
	if err != nil || !resumed {
		t.Fatalf("resume on the other replica: %v %v", resumed, err)
	}
	var got []string
	for _, e := range first {
		got = append(got, e.Name+" "+string(e.Data))
	}
	if want := []string{"status ok", "price p1", "price p2"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("resumed on the other replica after the status event: %q, want %q", got, want)
	}
	first, _, _, _ = a.Subscribe(strconv.FormatUint(a.Current()[NamePrice].ID, 10))
	if len(first) != 1 || first[0].Name != NameStatus || string(first[0].Data) != "degraded" {
		t.Errorf("resumed at the last id on the same replica: %v, want its current status alone", first)
	}
	// A status newer than the client's position comes in order, once.
	a.Publish(Offer{Name: NameStatus, Body: []byte("ok")})
	first, _, _, _ = a.Subscribe(strconv.FormatUint(a.Current()[NameSupply].ID, 10))
	got = got[:0]
	for _, e := range first {
		got = append(got, e.Name+" "+string(e.Data))
	}
	if want := []string{"price p1", "price p2", "status ok"}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("resumed before a newer status: %q, want %q", got, want)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWatch: the count of events published moves with each publication,
// also past the buffer, and the channel it returns closes at the next
// one; a closed hub says so.
func TestWatch(t *testing.T) {
	h := New(Options{Buffer: 2})
	n0, wake, err := h.Watch()
	if err != nil || n0 != 0 {
		t.Fatalf("empty hub: %d %v", n0, err)
	}
	for i := range 5 {
		h.Publish(offer(NamePrice, `{"p":`+strconv.Itoa(i)+`}`, t0))
	}
	select {
	case <-wake:
	default:
		t.Fatal("the channel did not close at a publication")
	}
	n, next, err := h.Watch()
	if err != nil || n != 5 {
		t.Errorf("after 5 events past a buffer of 2: %d %v", n, err)
	}
	h.Publish(offer(NamePrice, `{"p":4}`, t0)) // unchanged: no event
	select {
	case <-next:
		t.Error("the channel closed without an event")
	default:
	}
	h.Close()
	if _, _, err := h.Watch(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed hub: %v", err)
	}
}
