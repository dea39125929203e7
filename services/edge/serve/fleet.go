package serve

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tokendata/tokendata/services/edge/events"
)

// A fleet writes the open streams of /api/events without a goroutine per
// stream. An idle stream is a socket and a few words in the fleet's set;
// a publication wakes one dispatcher, which hands the streams to a few
// writers, one per CPU; each writes a stream's new events with one
// non-blocking writev of the hub's shared bytes. A stream whose socket
// cannot take its events at once (a slow reader: its 64 KiB send buffer
// full) is handed to a goroutine of its own, which waits for it within
// EDGE_EVENT_WRITE_TIMEOUT and gives it back once it has caught up, or
// drops it. A sweep on a clock of a tenth of the heartbeat (at most 1 s)
// sends heartbeats and ends streams at their maximum age. On Linux one
// more goroutine watches the streams' sockets for their clients' hang-ups
// (hangup_linux.go) and ends a stream whose client left at once, rather
// than at its next write.
//
// A goroutine per stream cost 4 KiB of stack and two timers, and 10,000
// of them made each garbage collection scan 10,000 stacks while the
// edge answered requests (make bench-events' edge row).
//
// A stream is owned by one goroutine at a time: the fleet's set marks it
// busy while a writer or its own goroutine has it.
type fleet struct {
	s       *Server
	hub     *events.Hub
	writers int
	tick    time.Duration

	start sync.Once
	// hangups watches the streams' sockets (nil: not on this platform, or
	// it could not start: a client that left is found at the next write).
	hangups *hangups
	mu      sync.Mutex
	all     map[*stream]struct{}
	// closed: the hub closed (the dispatcher's last sweep follows);
	// streams given back after it end.
	closed bool
}

// stream is one subscriber of /api/events.
type stream struct {
	// conn is the listener's connection (closing it frees its place
	// under the connection cap); sock the TCP socket under it.
	conn, sock net.Conn
	// raw writes without waiting; nil when sock is not a socket (every
	// write then waits, on the stream's own goroutine).
	raw syscall.RawConn
	cur events.Cursor
	// beatAt is when a heartbeat falls due, nothing else written; endAt
	// is its maximum age.
	beatAt, endAt time.Time
	busy          bool
	// hungUp: its client hung up while a writer or its own goroutine had
	// it (set under the fleet's lock); that one ends it.
	hungUp atomic.Bool
	// watchID is its id with the hang-up watcher (0: not watched).
	watchID uint64
}

func newFleet(s *Server, hub *events.Hub, heartbeat time.Duration) *fleet {
	return &fleet{s: s, hub: hub, writers: max(2, runtime.GOMAXPROCS(0)), tick: min(max(heartbeat/10, 5*time.Millisecond), time.Second),
		all: map[*stream]struct{}{}}
}

// add writes the stream's head and first events (the snapshot of a new
// client, or what a resuming one missed: published before it came, not
// fan-out), then puts it in the fleet. It ends the stream when the
// client cannot take them.
func (f *fleet) add(nc net.Conn, head []byte, first []*events.Event, cur events.Cursor) {
	f.start.Do(f.begin)
	o := f.s.cfg.Events
	sock := socket(nc, o.MaxPending)
	st := &stream{conn: nc, sock: sock, cur: cur, busy: true}
	if sc, ok := sock.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			st.raw = rc
		}
	}
	now := time.Now()
	st.endAt = now.Add(jitter(o.MaxAge, 0.1))
	bufs := eventBuffers(head, first)
	if err := f.wait(st, &bufs, first, false); err != nil {
		f.end(st, st.failure(first, err))
		return
	}
	st.beatAt = time.Now().Add(jitter(o.Heartbeat, 0.1))
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.end(st, endClosing)
		return
	}
	f.all[st] = struct{}{}
	f.mu.Unlock()
	// A socket that hung up before it is watched shows it at once.
	f.hangups.watch(st)
	// Events published while the first ones were written woke the
	// dispatcher before the stream was in its set.
	f.run(st, true)
}

// begin starts the dispatcher and the hang-up watcher, at the first
// stream.
func (f *fleet) begin() {
	h, err := newHangups(f.hangUp)
	if err != nil {
		f.s.log.Warn("event streams: their sockets are not watched; a client that leaves is found at the stream's next write", "error", err.Error())
	}
	f.hangups = h
	go f.dispatch()
}

// dispatch hands the streams to the writers at each publication, the
// streams due a heartbeat or at their end at each tick, and every stream
// once the hub closes; then it returns.
func (f *fleet) dispatch() {
	tick := time.NewTicker(f.tick)
	defer tick.Stop()
	served, _, _ := f.hub.Watch() // every stream added catches up itself
	for {
		published, wake, err := f.hub.Watch()
		if err != nil { // closed: every stream ends
			f.mu.Lock()
			f.closed = true
			f.mu.Unlock()
			f.hand(f.take(func(*stream) bool { return true }))
			// Streams still with their own goroutine end when they
			// come back; their sockets need no watching meanwhile.
			f.hangups.close()
			return
		}
		if published != served { // including while the writers wrote
			served = published
			f.hand(f.take(func(*stream) bool { return true }))
			continue
		}
		select {
		case <-wake:
		case now := <-tick.C:
			f.hand(f.take(func(st *stream) bool { return !now.Before(st.beatAt) || !now.Before(st.endAt) }))
		}
	}
}

// take marks busy and returns the streams of the set that are not busy
// and that due says are due.
func (f *fleet) take(due func(*stream) bool) []*stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*stream
	for st := range f.all {
		if !st.busy && due(st) {
			st.busy = true
			out = append(out, st)
		}
	}
	return out
}

// hand splits sts among the writers and waits for them: a writer never
// waits on a client (a slow one goes to a goroutine of its own).
func (f *fleet) hand(sts []*stream) {
	if len(sts) == 0 {
		return
	}
	n := min(f.writers, (len(sts)+63)/64)
	var wg sync.WaitGroup
	for i := range n {
		part := sts[i*len(sts)/n : (i+1)*len(sts)/n]
		wg.Go(func() {
			for _, st := range part {
				f.run(st, false)
			}
		})
	}
	wg.Wait()
}

// run writes st what it is due until it has nothing more, then gives it
// back to the set; own: this goroutine may wait for the client (a
// writer's may not).
func (f *fleet) run(st *stream, own bool) {
	for {
		switch f.step(st, own) {
		case stepEnded, stepHanded:
			return
		case stepIdle:
			if f.giveBack(st) {
				return
			}
		}
	}
}

type stepResult int

const (
	stepIdle   stepResult = iota // nothing due
	stepWrote                    // wrote; look again
	stepEnded                    // the stream ended
	stepHanded                   // it went to a goroutine of its own
)

// step writes st's new events, or its heartbeat when one is due, or ends
// it.
func (f *fleet) step(st *stream, own bool) stepResult {
	o := f.s.cfg.Events
	now := time.Now()
	if st.hungUp.Load() {
		f.end(st, endClient)
		return stepEnded
	}
	if !now.Before(st.endAt) {
		f.end(st, endMaxAge)
		return stepEnded
	}
	evs, _, err := f.hub.Next(&st.cur, uint64(o.MaxPending))
	switch {
	case errors.Is(err, events.ErrClosed):
		f.end(st, endClosing)
		return stepEnded
	case err != nil: // fell behind
		f.end(st, endSlow)
		return stepEnded
	}
	var prefix []byte
	if len(evs) == 0 {
		if now.Before(st.beatAt) {
			return stepIdle
		}
		prefix = heartbeat
	}
	bufs := eventBuffers(prefix, evs)
	if !own {
		done, err := st.try(&bufs)
		switch {
		case err != nil:
			f.end(st, st.failure(evs, err))
			return stepEnded
		case !done: // the socket is full: wait for it on a goroutine of its own
			waiting := &f.s.metrics.ev.waiting
			waiting.Add(1)
			go func() {
				defer waiting.Add(-1)
				if err := f.wait(st, &bufs, evs, true); err != nil {
					f.end(st, st.failure(evs, err))
					return
				}
				f.wrote(st)
				f.run(st, true)
			}()
			return stepHanded
		}
		f.delivered(evs, true)
	} else if err := f.wait(st, &bufs, evs, true); err != nil {
		f.end(st, st.failure(evs, err))
		return stepEnded
	}
	f.wrote(st)
	return stepWrote
}

// failure is why a stream whose write of evs failed with err ends: a
// write that waited out EDGE_EVENT_WRITE_TIMEOUT with events to send, a
// client too slow for them; a heartbeat alone that did (nothing else was
// pending: it has read nothing for a whole write timeout), or a
// connection reset or closed, a client gone; and a write the hang-up
// watcher cut short, a client gone.
func (st *stream) failure(evs []*events.Event, err error) string {
	if len(evs) > 0 && errors.Is(err, os.ErrDeadlineExceeded) && !st.hungUp.Load() {
		return endSlow
	}
	return endClient
}

// wrote schedules st's next heartbeat after a write.
func (f *fleet) wrote(st *stream) {
	st.beatAt = time.Now().Add(jitter(f.s.cfg.Events.Heartbeat, 0.1))
}

// giveBack returns st to the set, not busy; false when the hub published
// meanwhile and st is still this goroutine's to write (a dispatch that
// found it busy skipped it).
func (f *fleet) giveBack(st *stream) bool {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.end(st, endClosing)
		return true
	}
	if st.hungUp.Load() {
		f.mu.Unlock()
		f.end(st, endClient)
		return true
	}
	cur := st.cur // st is no longer this goroutine's once not busy
	st.busy = false
	f.mu.Unlock()
	if f.hub.Pending(cur) == 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if st.busy { // a dispatch has it now
		return true
	}
	st.busy = true
	return false
}

// hangUp ends st, whose client hung up (the watcher saw its socket's
// EOF, reset or error): at once when it is idle in the set; when a
// writer or its own goroutine has it, that one ends it (step, giveBack),
// and a write it waits on is cut short.
func (f *fleet) hangUp(st *stream) {
	f.mu.Lock()
	if _, ok := f.all[st]; !ok { // ended meanwhile
		f.mu.Unlock()
		return
	}
	st.hungUp.Store(true)
	if st.busy {
		f.mu.Unlock()
		// wait sets its deadline before it looks at hungUp: either it
		// sees the flag, or this deadline comes after its own.
		_ = st.sock.SetWriteDeadline(longAgo)
		return
	}
	st.busy = true
	f.mu.Unlock()
	f.end(st, endClient)
}

// longAgo is a deadline passed: it cuts a write short.
var longAgo = time.Unix(1, 0)

// end closes st, counts why, and takes it out of the set.
func (f *fleet) end(st *stream, reason string) {
	f.hangups.unwatch(st) // before the close: its descriptor may be reused at once
	_ = st.conn.Close()   // our listener's conn: frees its place under the cap
	f.mu.Lock()
	delete(f.all, st)
	f.mu.Unlock()
	m := f.s.metrics.ev
	m.open.Add(-1)
	m.ended.WithLabelValues(reason).Inc()
}

// eventBuffers are prefix and the events' shared bytes, for one writev.
func eventBuffers(prefix []byte, evs []*events.Event) net.Buffers {
	bufs := make(net.Buffers, 0, len(evs)+1)
	if len(prefix) > 0 {
		bufs = append(bufs, prefix)
	}
	for _, e := range evs {
		bufs = append(bufs, e.Wire())
	}
	return bufs
}

// try writes what of bufs the socket takes now, without waiting, and
// drops it from bufs; done when all of it was taken.
func (st *stream) try(bufs *net.Buffers) (done bool, err error) {
	if st.raw == nil {
		return false, nil
	}
	var n int
	var werr error
	if err := st.raw.Write(func(fd uintptr) bool {
		n, werr = unix.Writev(int(fd), (*bufs)[:min(len(*bufs), maxIOV)])
		return true // never wait here
	}); err != nil {
		return false, err
	}
	switch {
	case errors.Is(werr, unix.EAGAIN), errors.Is(werr, unix.EINTR):
		return false, nil
	case werr != nil:
		return false, werr
	}
	consume(bufs, n)
	return len(*bufs) == 0, nil
}

// maxIOV is the most buffers one writev takes (Linux's IOV_MAX).
const maxIOV = 1024

// consume drops the first n bytes of bufs.
func consume(bufs *net.Buffers, n int) {
	b := *bufs
	for len(b) > 0 && n >= len(b[0]) {
		n -= len(b[0])
		b = b[1:]
	}
	if len(b) > 0 && n > 0 {
		b[0] = b[0][n:]
	}
	*bufs = b
}

// wait writes bufs to st, waiting at most EDGE_EVENT_WRITE_TIMEOUT, and
// counts evs delivered; the error when the client did not take them
// (os.ErrDeadlineExceeded: not in time).
func (f *fleet) wait(st *stream, bufs *net.Buffers, evs []*events.Event, fanout bool) error {
	_ = st.sock.SetWriteDeadline(time.Now().Add(f.s.cfg.Events.WriteTimeout))
	if st.hungUp.Load() { // the client left: hangUp's cut may have come before this deadline
		return errHungUp
	}
	if _, err := bufs.WriteTo(st.sock); err != nil {
		return err
	}
	// No deadline between writes: a non-blocking write would fail on
	// one that passed.
	_ = st.sock.SetWriteDeadline(time.Time{})
	f.delivered(evs, fanout)
	return nil
}

// errHungUp: the client hung up before a write that would have waited.
var errHungUp = errors.New("the client hung up")

// delivered counts evs written to one subscriber; with fanout, the time
// since each one's publication goes to event_fanout_seconds.
func (f *fleet) delivered(evs []*events.Event, fanout bool) {
	if len(evs) == 0 {
		return
	}
	m := f.s.metrics.ev
	m.delivered.Add(float64(len(evs)))
	if fanout {
		now := time.Now()
		for _, e := range evs {
			m.fanout.Observe(now.Sub(e.At).Seconds())
		}
	}
}
