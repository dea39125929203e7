//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package serve

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sizeofTimespec is the size of the SCM_TIMESTAMPNS payload.
const sizeofTimespec = int(unsafe.Sizeof(unix.Timespec{}))

// rxStamps reads a TCP connection with recvmsg and the kernel's receive
// timestamp of the bytes each read returns (SO_TIMESTAMPNS: the time the
// last packet of them reached the host, CLOCK_REALTIME). A request that
// waited in the socket while the process had no CPU (a CFS quota spent,
// a stopped or starved pod) carries that wait in its measured duration,
// which a clock read in the handler misses (docs/benchmarks.md, "A
// thirteenth new machine", has the figures).
//
// One per connection. net/http reads a connection from one goroutine at
// a time; mu keeps net.Conn's promise to other callers all the same (a
// read's buffer and results live here, outside the descriptor's own read
// lock). Built on 64-bit Linux only, where recvmsg is a system call of
// its own (386 and s390x reach it through socketcall).
type rxStamps struct {
	mu  sync.Mutex
	nc  net.Conn
	raw syscall.RawConn
	oob []byte // made, so 8-byte aligned for the cmsghdr and timespec
	fn  func(fd uintptr) bool
	// the recvmsg arguments, kept with the connection: x/sys's Recvmsg
	// puts its own on the heap, three allocations a read
	msg unix.Msghdr
	iov unix.Iovec

	// one read's arguments and results, for fn
	p       []byte
	n, oobn int
	err     error
}

// stampListener turns the receive timestamps on for l's socket, which
// its connections inherit: the kernel stamps packets only while some
// socket of the host asks for it (and turns that on a moment after the
// first asks), so asking at accept would leave the first connections'
// first requests unstamped.
func stampListener(l net.Listener) {
	tl, ok := l.(*net.TCPListener)
	if !ok {
		return
	}
	if raw, err := tl.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		})
	}
}

// newRxStamps reads nc with its receive timestamps, which it has from
// its listener (stampListener; a read without them is timed from the
// handler); nil when nc is not a TCP connection.
func newRxStamps(nc net.Conn) *rxStamps {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rxStamps{nc: nc, raw: raw, oob: make([]byte, unix.CmsgSpace(sizeofTimespec)*2)}
	r.fn = r.recvmsg
	return r
}

// recvmsg is one read of r.p, for the runtime's poller: false to wait
// until the socket is readable.
func (r *rxStamps) recvmsg(fd uintptr) bool {
	r.iov.Base = &r.p[0]
	r.iov.SetLen(len(r.p))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	for {
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
		switch errno {
		case 0:
			r.n, r.oobn, r.err = int(n), int(r.msg.Controllen), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.oobn, r.err = 0, 0, errno
		return true
	}
}

// read is the connection's Read: the bytes, and the receive time of the
// last packet of them in Unix nanoseconds (0: the kernel gave none, as
// for packets that came before the timestamps were on).
func (r *rxStamps) read(p []byte) (int, int64, error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p = p
	err := r.raw.Read(r.fn)    // waits in the runtime's poller, deadlines kept
	r.p, r.iov.Base = nil, nil // the caller's buffer is not kept
	if err != nil {
		// the poller's error (a deadline, a closed connection), already
		// a *net.OpError of the raw read: said as a read's, as
		// net.TCPConn's Read says it
		if oe, ok := err.(*net.OpError); ok { //nolint:errorlint // rawConn.Read's own, unwrapped (errors.As would put its target on the heap, a read)
			oe.Op = "read"
		}
		return 0, 0, err
	}
	if r.err != nil {
		return 0, 0, &net.OpError{Op: "read", Net: "tcp", Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: os.NewSyscallError("recvmsg", r.err)}
	}
	if r.n == 0 {
		return 0, 0, io.EOF
	}
	return r.n, r.stamp(), nil
}

// stamp is the SCM_TIMESTAMPNS of the last read's control messages.
func (r *rxStamps) stamp() int64 {
	b := r.oob[:r.oobn]
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(b) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(sizeofTimespec) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return ts.Nano()
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return 0
}
