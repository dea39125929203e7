//go:build linux

package serve

import (
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hangups watches the sockets of the open streams for their clients'
// hang-ups, so that a stream whose client left frees its slot and its
// connection at once rather than at its next write (a heartbeat, up to
// EDGE_EVENT_HEARTBEAT later). One epoll instance holds every stream's
// socket, registered for EPOLLRDHUP (EPOLLHUP and EPOLLERR come
// unasked), one-shot; no goroutine per stream. The epoll descriptor is
// itself in the runtime's poller (an epoll instance is readable while it
// has events ready), so the one goroutine that reads it parks like a
// socket read, with no thread held in epoll_wait, and closing it wakes
// that goroutine at once.
//
// What counts as a hang-up: the client closed or reset the connection,
// or shut down its sending side (EOF: the stream's requests are over, as
// net/http takes it for a handler's request), or the socket has an error.
// Bytes a client sends after its request (a pipelined request, garbage)
// do not wake the watcher (no EPOLLIN); the stream reads none of them.
//
// An event carries a stream's id, never its descriptor: a descriptor is
// reused once closed, and an event collected before a stream ended must
// not end the stream that has its number now. A stream is deregistered
// before its connection is closed.
type hangups struct {
	ep   *os.File
	raw  syscall.RawConn
	gone func(*stream)
	done chan struct{}

	mu     sync.Mutex
	byID   map[uint64]*stream
	lastID uint64
}

// hangupEvents are the events a stream's socket is registered for.
const hangupEvents = unix.EPOLLRDHUP | unix.EPOLLONESHOT

// newHangups starts watching; gone is called, on the watcher's
// goroutine, once for each stream whose client hung up.
func newHangups(gone func(*stream)) (*hangups, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	ep := os.NewFile(uintptr(fd), "epoll")
	// Only a descriptor in the runtime's poller takes a deadline.
	if err := ep.SetReadDeadline(time.Time{}); err != nil {
		_ = ep.Close()
		return nil, err
	}
	raw, err := ep.SyscallConn()
	if err != nil {
		_ = ep.Close()
		return nil, err
	}
	h := &hangups{ep: ep, raw: raw, gone: gone, done: make(chan struct{}), byID: map[uint64]*stream{}}
	go h.run()
	return h, nil
}

// watch registers st's socket; st's owner calls it once.
func (h *hangups) watch(st *stream) {
	if h == nil || st.raw == nil {
		return
	}
	h.mu.Lock()
	h.lastID++
	id := h.lastID
	h.byID[id] = st
	st.watchID = id
	h.mu.Unlock()
	ev := unix.EpollEvent{Events: hangupEvents, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))} //nolint:gosec // the id's two halves, bit for bit
	var err error
	if cerr := st.raw.Control(func(fd uintptr) { err = h.ctl(unix.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil {
		err = cerr
	}
	if err != nil { // the socket or the watcher closed: seen at the next write, as before
		h.mu.Lock()
		delete(h.byID, id)
		h.mu.Unlock()
	}
}

// unwatch deregisters st's socket; its owner calls it before it closes
// the connection.
func (h *hangups) unwatch(st *stream) {
	if h == nil || st.watchID == 0 {
		return
	}
	h.mu.Lock()
	delete(h.byID, st.watchID)
	h.mu.Unlock()
	_ = st.raw.Control(func(fd uintptr) { _ = h.ctl(unix.EPOLL_CTL_DEL, int(fd), nil) })
}

// ctl is epoll_ctl on the watcher's instance (an error once it closed:
// the descriptor is held while in use, never a number reused).
func (h *hangups) ctl(op, fd int, ev *unix.EpollEvent) error {
	var err error
	if cerr := h.raw.Control(func(ep uintptr) { err = unix.EpollCtl(int(ep), op, fd, ev) }); cerr != nil {
		return cerr
	}
	return err
}

// run hands each hung-up stream to gone until the watcher closes.
func (h *hangups) run() {
	defer close(h.done)
	evs := make([]unix.EpollEvent, 256)
	var hung []*stream
	for {
		var n int
		var werr error
		err := h.raw.Read(func(ep uintptr) bool {
			for {
				n, werr = unix.EpollWait(int(ep), evs, 0)
				if werr != unix.EINTR {
					break
				}
			}
			return n > 0 || werr != nil // none ready: park until the poller says so
		})
		if err != nil || werr != nil { // closed (or, never seen, epoll_wait failed: writes find them)
			return
		}
		hung = hung[:0]
		h.mu.Lock()
		for _, ev := range evs[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32 //nolint:gosec // the id's two halves, bit for bit
			if st, ok := h.byID[id]; ok {
				delete(h.byID, id)
				hung = append(hung, st)
			}
		}
		h.mu.Unlock()
		for _, st := range hung {
			h.gone(st)
		}
		clear(hung)
	}
}

// close stops watching and waits for the watcher's goroutine.
func (h *hangups) close() {
	if h == nil {
		return
	}
	_ = h.ep.Close()
	<-h.done
}
