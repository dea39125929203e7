package serve

import (
	"sync"
	"time"
)

// logLimiter caps log lines at perSecond for one kind (a route and a
// status), per second of the clock. The lines left out are counted; the
// next line written for that kind says how many (the "suppressed"
// attribute), and the metric counts them all. Kinds come from this code
// (route templates, "unmatched", statuses the edge writes), so the map
// stays small.
type logLimiter struct {
	perSecond int
	now       func() time.Time
	left      func() // counts one line left out

	mu    sync.Mutex
	kinds map[logKind]*logWindow
}

type logKind struct {
	route  string
	status int
}

type logWindow struct {
	second  int64
	written int
	// dropped counts the lines left out since the last one written.
	dropped int
}

func newLogLimiter(perSecond int, now func() time.Time, left func()) *logLimiter {
	return &logLimiter{perSecond: perSecond, now: now, left: left, kinds: map[logKind]*logWindow{}}
}

// allow reports whether a line of this kind may be written now, and how
// many lines of the kind were left out before it.
func (l *logLimiter) allow(route string, status int) (ok bool, suppressed int) {
	sec := l.now().Unix()
	k := logKind{route, status}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.kinds[k]
	if w == nil {
		w = &logWindow{second: sec}
		l.kinds[k] = w
	}
	if w.second != sec {
		w.second, w.written = sec, 0
	}
	if w.written >= l.perSecond {
		w.dropped++
		l.left()
		return false, 0
	}
	w.written++
	suppressed, w.dropped = w.dropped, 0
	return true, suppressed
}
