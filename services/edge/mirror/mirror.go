// Package mirror is the edge's copy of the store: it reads the four
// documents and the collectors' status records when a collector announces
// an update and on a short poll, reads the history, keeps the health of
// the store, hands each new state to the view (services/edge/view) and
// publishes the rendered view through one atomic pointer. It knows
// nothing of HTTP: the server (services/edge/serve) asks it for the
// current view.
package mirror

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/services/edge/view"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// Options are what a mirror needs: the store, its settings, the render
// inputs and the registry of its series.
type Options struct {
	Store *store.Store
	// MaxDocumentBytes: a larger value is refused unread.
	MaxDocumentBytes int64
	// StoreTimeout bounds one read of the store.
	StoreTimeout time.Duration
	// SnapshotPoll is how often the store is read besides notifications.
	SnapshotPoll time.Duration
	// ReadyGrace is how long after the first read the mirror waits for
	// every domain before it is ready without them.
	ReadyGrace time.Duration
	Log        *slog.Logger
	Now        func() time.Time
	Timings    map[contract.Domain]contract.Timing
	view.Redactor
	// Inputs render the views.
	Inputs   *view.RenderInputs
	Registry prometheus.Registerer
	// OnPublish, when set, is called after each new view is published
	// (the stream of changes wakes on it). It must not block.
	OnPublish func()
}

// Mirror is the store side of the edge: snapshot refresher, history
// reads, store health and status records, and the published view.
type Mirror struct {
	cfg     Options
	store   *store.Store
	reader  *store.Reader
	log     *slog.Logger
	now     func() time.Time
	timings map[contract.Domain]contract.Timing
	backend string // "redis" or "memory"
	view.Redactor

	// bodies renders the views; it holds what rendering needs, not the
	// mirror.
	bodies  *view.RenderInputs
	metrics *metrics

	view atomic.Pointer[view.View]
	// ahead is the view rendered for the current one's next boundary
	// (ahead.go).
	ahead  aheadState
	health atomic.Pointer[snapshot.StoreHealth]
	// statuses are the collectors' status records of the last read.
	statuses atomic.Pointer[map[string]contract.Status]
	// loaded is set after the first successful read of the store, and
	// firstRead (Unix nanoseconds) is when it happened.
	loaded    atomic.Bool
	firstRead atomic.Int64
	// checked is set once the store has been read, or tried and failed,
	// and the view of that read published (Checked).
	checked atomic.Bool
	// warm is set once the edge has held every domain, or EDGE_READY_GRACE
	// has passed since the first read: the start-up wait is over for good.
	warm atomic.Bool

	readMu    sync.Mutex // one store read of a refresh at a time
	refreshMu sync.Mutex // one merge and render of a view at a time
	// histMu orders history reads: the first one (in the first refresh)
	// and the later ones (in the refresh, or the refresher's history
	// goroutine). histReads is when each domain's history was last read.
	histMu    sync.Mutex
	histReads historyReads
	// histWake, while the refresher's history goroutine runs, takes the
	// refreshes' requests for a history read in its place.
	histWake  chan struct{}
	histAsync atomic.Bool
}

// New builds the mirror over o.Store, its series registered on
// o.Registry, with the view of an empty state published. It does not
// touch the store: Refresh and Refresher do.
func New(o Options) *Mirror {
	s := &Mirror{cfg: o, store: o.Store, reader: o.Store.NewReader(o.MaxDocumentBytes), log: o.Log, now: o.Now,
		timings: o.Timings, backend: "redis", Redactor: o.Redactor, bodies: o.Inputs,
		histReads: historyReads{}, histWake: make(chan struct{}, 1)}
	if _, ok := o.Store.Backend().(*store.Memory); ok {
		s.backend = "memory"
	}
	s.metrics = newMetrics(o.Registry, s)
	s.health.Store(&snapshot.StoreHealth{Err: "not checked yet"})
	s.view.Store(s.render(&snapshot.State{Docs: map[contract.Domain]*snapshot.Doc{}, Rejected: map[contract.Domain]string{}}, s.now()))
	return s
}

// Ready reports whether the mirror has data to serve: it has read the
// store once; it holds every domain, or ReadyGrace has passed since that
// first read; and either the store answers or it has data to serve.
//
// The grace is for a replica started while Redis is empty (restarted
// without persistence): the collectors write back their last good
// documents within COLLECTOR_WATCH_INTERVAL, and until then the replicas
// already running serve their copies, so the new one waits rather than
// answer 503 where they answer 200. On a fresh install nothing comes in
// time, and the edge turns ready after the grace to answer 503 honestly.
// Once over, the wait never comes back: a running edge that loses a
// domain stays ready.
func (s *Mirror) Ready() bool {
	if !s.loaded.Load() {
		return false
	}
	docs := s.view.Load().State.Docs
	if !s.warm.Load() {
		all := len(docs) == len(contract.Domains)
		if !all && s.now().Sub(time.Unix(0, s.firstRead.Load())) < s.cfg.ReadyGrace {
			return false
		}
		if s.warm.CompareAndSwap(false, true) && !all {
			s.log.Info("ready without every domain: EDGE_READY_GRACE has passed since the first read of the store",
				"domains_held", len(docs), "grace", s.cfg.ReadyGrace.String())
		}
	}
	if h := s.health.Load(); h != nil && h.OK {
		return true
	}
	return len(docs) > 0
}

// Refresh reads the store once, every document fetched again, and
// publishes a new view when anything changed. A failed read keeps the
// current snapshot.
func (s *Mirror) Refresh(ctx context.Context) { s.refresh(ctx, contract.Domains...) }

// RefreshOf is Refresh fetching only the fetch domains and the
// documents whose size or expiry moved (what a poll, or a notification of
// them, does).
func (s *Mirror) RefreshOf(ctx context.Context, fetch ...contract.Domain) { s.refresh(ctx, fetch...) }

// View is the published view, as it is (Current re-renders it first when
// it is past a boundary).
func (s *Mirror) View() *view.View { return s.view.Load() }

// Checked reports whether the store has been read once, or tried and
// failed, and the view of that read published. Until then the view is the
// empty one of the start, which tells nothing of the store or the data:
// the event feed offers no event of it (a client that connects to a ready
// edge must not get a "not checked yet" status first).
func (s *Mirror) Checked() bool { return s.checked.Load() }

// Ahead is the view rendered ahead of a boundary (next) and the view it
// follows (base); nil when none is.
func (s *Mirror) Ahead() (base, next *view.View) {
	if a := s.ahead.view.Load(); a != nil {
		return a.base, a.next
	}
	return nil, nil
}

// Statuses are the collectors' status records of the last read.
func (s *Mirror) Statuses() map[string]contract.Status {
	if p := s.statuses.Load(); p != nil {
		return *p
	}
	return nil
}

// StatusReport is /api/status of now: from the published view, the last
// store check and the status records of the last read.
func (s *Mirror) StatusReport() view.StatusBody {
	return s.StatusReportOf(s.view.Load().State, s.Statuses())
}

// StatusReportOf is the status report of now for the state st and the
// status records statuses, with the last store check.
func (s *Mirror) StatusReportOf(st *snapshot.State, statuses map[string]contract.Status) view.StatusBody {
	return s.bodies.StatusReport(st, s.health.Load(), statuses, s.backend, s.now())
}
