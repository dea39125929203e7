// Package collector runs a collector's polls: one loop per domain on its
// own interval, retries with backoff and jitter inside a poll, the status
// record after every run, and the metrics every collector exports. A
// collector supplies only what reads its upstream and builds a document.
//
// A failed or invalid poll never overwrites good data: the document is
// written only when Poll returns one without error, with the poll's
// history samples (Result.Samples) in the same step.
//
// Nothing is lost when the store loses its data (a Redis restarted without
// persistence, a FLUSHALL): the runner keeps its last good document of
// each domain and its status record in memory, checks every Watch that the
// store still holds them, writes back at once those it lost, unchanged,
// and then polls early. See Restore.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// Result is what a successful poll produces.
type Result struct {
	// Doc is the domain document (contract.Supply, Market...).
	Doc any
	// Source describes where it came from.
	Source contract.Source
	// UpdatedAt is when the upstream was read; zero means now.
	UpdatedAt time.Time
	// Upstream overrides the job's upstream in the status record (e.g. a
	// fallback source).
	Upstream string
	// Note is kept in the status record (e.g. "fallback source used").
	Note string
	// Samples are the document's values for the history (measures of the
	// job's domain), appended with the document in one step. Only a
	// successful poll has them: a document written back by Restore never
	// appends, so no point is ever made up.
	Samples []contract.Sample
	// Ledger, when set, is the poll's cross-check of the ledger nodes,
	// kept in the status record's run.
	Ledger *contract.LedgerCrossCheck
}

// Job is one domain a collector writes.
type Job struct {
	Domain contract.Domain
	// Upstream is the upstream name recorded in the status record.
	Upstream string
	Timing   contract.Timing
	// Poll reads the upstream once. It is retried on retryable errors.
	Poll func(ctx context.Context) (Result, error)
}

// Backoff is the retry policy inside one poll.
type Backoff struct {
	// Attempts is the total number of tries (≥ 1).
	Attempts int
	// Base is the first wait; each next one doubles, up to Max.
	Base, Max time.Duration
}

// DefaultBackoff: 3 tries, 1 s then 2 s, each ±50 % jitter.
var DefaultBackoff = Backoff{Attempts: 3, Base: time.Second, Max: 30 * time.Second}

// DefaultWatch is how often Run checks the store when Runner.Watch is zero
// (the default of COLLECTOR_WATCH_INTERVAL).
const DefaultWatch = 5 * time.Second

// DefaultStoreTimeout bounds each of a runner's calls to the store when
// Runner.StoreTimeout is zero: a commit, a status record, one check of
// the store with its write-back.
const DefaultStoreTimeout = 5 * time.Second

// Runner runs the jobs of one collector.
type Runner struct {
	// Name is the collector (contract.Collector*).
	Name  string
	Store *store.Store
	Jobs  []Job
	// Metrics may be shared by several runners in one process.
	Metrics *Metrics
	Log     *slog.Logger
	Backoff Backoff
	// Simulated marks status records of demo mode.
	Simulated bool
	// Redactor removes the configured secrets from every message before
	// it is recorded, logged or returned (nil: none configured).
	Redactor *config.Redactor
	// Watch is how often Run checks that the store still holds the last
	// good documents and the status record, and writes back what it lost
	// (COLLECTOR_WATCH_INTERVAL); zero means DefaultWatch.
	Watch time.Duration
	// StoreTimeout bounds each call the runner makes to the store (zero:
	// DefaultStoreTimeout). A store that does not answer (a Redis pod
	// gone, whose address still takes connections it never completes)
	// would otherwise hold the runner's writes, and the write-back that
	// waits for them, for as long as the client's retries last.
	StoreTimeout time.Duration

	mu     sync.Mutex
	status contract.Status
	// subs are the ledger subscriptions kept in every status record
	// (SetSubscriptions); early are Run's per-job wake-ups (Poke).
	subs  []contract.LedgerSubscription
	early map[contract.Domain]chan struct{}

	// writeMu orders the runner's writes to the store, so that writing
	// back a lost record never overwrites a newer one. It guards last.
	writeMu sync.Mutex
	// last is the last good envelope of each domain: what Restore writes
	// back.
	last map[contract.Domain]contract.Envelope
	// restores counts the watch's write-backs: a poll under way when one
	// happened, whose own write the store then refused, polls again at
	// once (see Run).
	restores atomic.Uint64
}

// storeCtx bounds one call to the store (StoreTimeout).
func (r *Runner) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.StoreTimeout
	if d <= 0 {
		d = DefaultStoreTimeout
	}
	return context.WithTimeout(ctx, d)
}

// Run adopts what the previous process of the collector left in the store
// (see adopt), then polls every job at once, then each on its own
// interval, until ctx is done. Beside the polls it watches the store (see Restore): when it
// had to write anything back, every job polls again at once. It returns
// nil on cancellation: failures are recorded, never fatal, because a
// collector stays up while its upstream is down.
func (r *Runner) Run(ctx context.Context) error {
	r.adopt(ctx)
	var wg sync.WaitGroup
	early := make([]chan struct{}, len(r.Jobs))
	busy := make([]atomic.Bool, len(r.Jobs))
	records := []string{"status"}
	r.mu.Lock()
	r.early = make(map[contract.Domain]chan struct{}, len(r.Jobs))
	for i, j := range r.Jobs {
		early[i] = make(chan struct{}, 1)
		r.early[j.Domain] = early[i]
	}
	r.mu.Unlock()
	for i, j := range r.Jobs {
		records = append(records, string(j.Domain))
		wg.Go(func() {
			t := time.NewTicker(j.Timing.Refresh)
			defer t.Stop()
			failed := 0           // polls failed in a row
			var retry *time.Timer // a failed poll is tried again before the next tick
			defer func() {
				if retry != nil {
					retry.Stop()
				}
			}()
			for {
				gen := r.restores.Load()
				busy[i].Store(true)
				err := r.RunOnce(ctx, j.Domain)
				busy[i].Store(false)
				if retry != nil {
					retry.Stop()
				}
				var retryC <-chan time.Time
				if err != nil && ctx.Err() == nil {
					failed++
					if d, ok := retryIn(j.Timing.Refresh, failed, err); ok {
						retry = time.NewTimer(d)
						retryC = retry.C
					}
				} else {
					failed = 0
				}
				// The store came back while this poll was under way, too
				// late for its write: what the write-back cannot bring
				// (the poll's history samples) comes from polling again
				// now rather than at the next tick. The watch counts a
				// write-back before it looks at busy, so one of the two
				// always sees the other.
				if ce := (*Error)(nil); errors.As(err, &ce) && ce.Kind == contract.ErrKindStore && r.restores.Load() != gen {
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-early[i]:
				case <-retryC:
				}
			}
		})
	}
	r.Metrics.initRepublish(r.Name, records...)
	wg.Go(func() { r.watch(ctx, early, busy) })
	wg.Wait()
	return nil
}

// retryIn is how soon Run polls again after the failed-th failed poll in
// a row ended with err, when that is sooner than the refresh (ok false:
// the next tick is the next poll). A collector polling every few minutes would otherwise
// leave its domain without a fresh document for a whole refresh after an
// upstream's short outage (a restart of its node, a pod moved): the polls
// that follow a failure come after firstRetry, then twice as long each
// time, never sooner than the wait the upstream asked for (Retry-After).
// Only a failure worth retrying is (Classify: an upstream down, a timeout,
// a refusal to retry later), not a configuration refused.
func retryIn(refresh time.Duration, failed int, err error) (time.Duration, bool) {
	ce := Classify(err)
	if !ce.Retry || ce.Kind == contract.ErrKindStore {
		return 0, false // the store's return has its own early poll (watch)
	}
	d := firstRetry << min(failed-1, 16)
	d = max(d, ce.RetryAfter)
	return d, d < refresh
}

// firstRetry is how soon a poll is tried again after the first failure.
const firstRetry = 5 * time.Second

// Poke asks Run to poll domain d now rather than at its next tick. It
// never blocks: pokes made while a poll of d is pending or running
// coalesce into one poll after it. It reports whether Run took the poke
// (false before Run starts, or for a domain without a job).
func (r *Runner) Poke(d contract.Domain) bool {
	r.mu.Lock()
	ch, ok := r.early[d]
	r.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- struct{}{}:
	default: // one is pending already
	}
	return true
}

// SetSubscriptions makes subs the ledger subscriptions of every status
// record from now on: the next run's record carries them.
func (r *Runner) SetSubscriptions(subs []contract.LedgerSubscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append([]contract.LedgerSubscription(nil), subs...)
	for i := range r.subs {
		r.subs[i].Error = r.text(r.subs[i].Error)
	}
}

// WriteSubscriptions is SetSubscriptions, then the status record written
// at once (best effort: a store that refuses it gets the next run's), so
// that a subscription's change of state shows before the next poll.
func (r *Runner) WriteSubscriptions(ctx context.Context, subs []contract.LedgerSubscription) {
	r.SetSubscriptions(subs)
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	ran := len(r.status.Runs) > 0
	r.mu.Unlock()
	if !ran { // the first run writes the first record, with every domain
		return
	}
	sctx, cancel := r.storeCtx(ctx)
	defer cancel()
	if err := r.Store.WriteStatus(sctx, r.Status()); err != nil && ctx.Err() == nil {
		r.Log.Debug("status record not written", "error", "store unavailable")
	}
}

func (r *Runner) job(d contract.Domain) *Job {
	for i := range r.Jobs {
		if r.Jobs[i].Domain == d {
			return &r.Jobs[i]
		}
	}
	return nil
}

// RunOnce polls one domain now (with retries) and records the run: after
// a good poll, the document and the status record go to the store in one
// atomic step (store.Commit), so that no reader ever sees a document
// without the run that wrote it, even when the collector is killed in the
// middle; after a failed one, the status record alone. It returns the
// poll's classified error, or nil; when ctx ends mid-poll it records
// nothing and returns ctx's error.
func (r *Runner) RunOnce(ctx context.Context, d contract.Domain) error {
	job := r.job(d)
	if job == nil {
		return fmt.Errorf("collector %s has no %s job", r.Name, d)
	}
	started := time.Now()
	res, err := r.pollWithRetry(ctx, job)
	var env *contract.Envelope
	if err == nil {
		env, err = r.envelope(job, res)
	}
	if ctx.Err() != nil && err != nil {
		return ctx.Err() // stopping: not a failure of the upstream, nothing recorded
	}
	run := contract.Run{StartedAt: started.UTC(), Upstream: job.Upstream}
	if err == nil {
		run.Note = r.text(res.Note)
		run.Ledger = res.Ledger
		if res.Upstream != "" {
			run.Upstream = res.Upstream
		}
	} else if ce := (*Error)(nil); errors.As(err, &ce) {
		run.Ledger = ce.Ledger
	}
	run, ce, stopped := r.record(ctx, job, env, res.Samples, run, err)
	if stopped {
		return ctx.Err()
	}
	r.Metrics.observeRun(r.Name, d, run, run.FinishedAt.Sub(started))
	if ce != nil {
		r.Log.Warn("poll failed", "domain", d, "kind", ce.Kind, "error", ce.Message, "remedy", ce.Remedy,
			"consecutive_failures", run.ConsecutiveFailures)
		return ce
	}
	r.Log.Debug("poll ok", "domain", d, "duration", run.FinishedAt.Sub(started).String())
	return nil
}

func (r *Runner) pollWithRetry(ctx context.Context, job *Job) (Result, error) {
	b := r.Backoff
	if b.Attempts <= 0 {
		b = DefaultBackoff
	}
	wait := b.Base
	for attempt := 1; ; attempt++ {
		res, err := job.Poll(ctx)
		if err == nil {
			return res, nil
		}
		ce := Classify(err)
		if !ce.Retry || attempt >= b.Attempts || ctx.Err() != nil {
			return Result{}, err
		}
		// An upstream that asks for a longer wait than this poll may take
		// (half the refresh: never retry into the next poll) is not
		// retried sooner than it asked: the poll ends here.
		if ce.RetryAfter > job.Timing.Refresh/2 {
			return Result{}, err
		}
		d := wait/2 + rand.N(wait+1) // jitter: 0.5× to 1.5×
		if ce.RetryAfter > d {
			d = ce.RetryAfter
		}
		if d > job.Timing.Refresh/2 { // never retry into the next poll
			d = job.Timing.Refresh / 2
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(d):
		}
		wait = min(2*wait, b.Max)
	}
}

// envelope wraps a good poll's document.
func (r *Runner) envelope(job *Job, res Result) (*contract.Envelope, error) {
	at := res.UpdatedAt
	if at.IsZero() {
		at = time.Now()
	}
	src := res.Source
	src.Simulated = src.Simulated || r.Simulated
	env, err := contract.NewEnvelope(r.Store.Mint(), job.Domain, at, src, res.Doc)
	if err != nil {
		return nil, &Error{Kind: contract.ErrKindInternal, Message: err.Error()}
	}
	return &env, nil
}

// record writes the run of job to the store. With env (a good poll), the
// document, the status record that names the run and the poll's history
// samples go in one atomic commit; when the store refuses it, the run is recorded as a store
// failure. Without env, pollErr is the failure recorded, in the status
// record alone (best effort: a store that cannot take the status cannot
// take documents either, and that is already reported). stopped is true
// when ctx ended during the commit: then nothing is recorded.
func (r *Runner) record(ctx context.Context, job *Job, env *contract.Envelope, samples []contract.Sample, run contract.Run, pollErr error) (_ contract.Run, ce *Error, stopped bool) {
	r.writeMu.Lock() // a record written back by Restore is never newer than this one
	defer r.writeMu.Unlock()
	if env != nil {
		// A good poll is the last good document, whether or not the store
		// takes it now: it is what Restore writes back if the store loses
		// the domain.
		r.keepLocked(*env)
		run.OK, run.FinishedAt = true, time.Now().UTC()
		st := r.withRun(job.Domain, run)
		// The key runs out TTL after the document's date, not after the
		// write: a slow poll or write never stretches a document's life.
		// A poll slower than the TTL leaves a key of 1 ms: gone at once.
		ttl := max(time.Until(env.UpdatedAt.Add(job.Timing.TTL)), time.Millisecond)
		sctx, cancel := r.storeCtx(ctx)
		err := r.Store.Commit(sctx, *env, ttl, st, samples...)
		cancel()
		if err == nil {
			r.setStatus(st)
			return st.Runs[job.Domain], nil, false
		}
		if ctx.Err() != nil {
			return run, nil, true
		}
		pollErr = &Error{Kind: contract.ErrKindStore, Message: "writing the document to the store failed"}
		run.Note, run.Upstream = "", job.Upstream
	}
	ce = r.clean(Classify(pollErr))
	run.OK, run.FinishedAt = false, time.Now().UTC()
	run.ErrorKind, run.Error, run.Remedy = ce.Kind, ce.Message, ce.Remedy
	st := r.withRun(job.Domain, run)
	r.setStatus(st)
	sctx, cancel := r.storeCtx(context.WithoutCancel(ctx))
	defer cancel()
	if err := r.Store.WriteStatus(sctx, st); err != nil {
		r.Log.Warn("status record not written", "error", "store unavailable")
	}
	return st.Runs[job.Domain], ce, false
}

// withRun returns the status record with run as the last run of d, its
// last success and consecutive failures carried over from the previous
// run; the runner's record is not changed.
func (r *Runner) withRun(d contract.Domain, run contract.Run) contract.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.status.Runs[d]
	run.LastSuccessAt = prev.LastSuccessAt
	if run.OK {
		t := run.FinishedAt
		run.LastSuccessAt = &t
	} else {
		run.ConsecutiveFailures = prev.ConsecutiveFailures + 1
	}
	st := r.snapshotLocked()
	st.Runs[d] = run
	return st
}

// setStatus makes st the runner's status record.
func (r *Runner) setStatus(st contract.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = st
}

// Status returns a copy of the collector's status record.
func (r *Runner) Status() contract.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

func (r *Runner) snapshotLocked() contract.Status {
	st := contract.Status{Collector: r.Name, Simulated: r.Simulated, Runs: make(map[contract.Domain]contract.Run, len(r.status.Runs))}
	for k, v := range r.status.Runs {
		st.Runs[k] = v
	}
	if len(r.subs) > 0 {
		st.Subscriptions = append([]contract.LedgerSubscription(nil), r.subs...)
	}
	return st
}
