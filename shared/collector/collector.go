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
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// Error is a classified poll failure. Message and Remedy must not carry
// secrets (URLs, keys); the Runner redacts them once more, with every
// configured secret, before they are recorded or logged.
type Error struct {
	// Kind is one of contract.ErrKind*.
	Kind string
	// Message says what failed.
	Message string
	// Remedy says what an operator can do, when known.
	Remedy string
	// Retry is true when trying again within the same poll may help.
	Retry bool
	// RetryAfter, when set, is the upstream's requested wait.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Errorf returns a classified error.
func Errorf(kind string, retry bool, format string, a ...any) *Error {
	return &Error{Kind: kind, Retry: retry, Message: fmt.Sprintf(format, a...)}
}

// Classify turns any error into an *Error: an *Error stays as it is;
// timeouts and network errors are retryable unavailability; the rest is
// internal. Messages of unclassified errors are replaced by a generic one,
// since they may quote a URL.
func Classify(err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Kind: contract.ErrKindUnavailable, Message: "upstream timed out", Retry: true}
	case errors.As(err, &ne):
		return &Error{Kind: contract.ErrKindUnavailable, Message: "upstream connection failed", Retry: true}
	}
	return &Error{Kind: contract.ErrKindInternal, Message: "unexpected error (see the collector's log)"}
}

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

	mu     sync.Mutex
	status contract.Status

	// writeMu orders the runner's writes to the store, so that writing
	// back a lost record never overwrites a newer one. It guards last.
	writeMu sync.Mutex
	// last is the last good envelope of each domain: what Restore writes
	// back.
	last map[contract.Domain]contract.Envelope
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
	for i, j := range r.Jobs {
		records = append(records, string(j.Domain))
		early[i] = make(chan struct{}, 1)
		wg.Go(func() {
			t := time.NewTicker(j.Timing.Refresh)
			defer t.Stop()
			for {
				busy[i].Store(true)
				_ = r.RunOnce(ctx, j.Domain)
				busy[i].Store(false)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-early[i]:
				}
			}
		})
	}
	r.Metrics.initRepublish(r.Name, records...)
	wg.Go(func() { r.watch(ctx, early, busy) })
	wg.Wait()
	return nil
}

// watch runs Restore every Watch until ctx is done, and asks every job
// not polling at that moment for an early poll after anything was written
// back.
func (r *Runner) watch(ctx context.Context, early []chan struct{}, busy []atomic.Bool) {
	every := r.Watch
	if every <= 0 {
		every = DefaultWatch
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		restored, err := r.Restore(ctx)
		if err != nil && ctx.Err() == nil {
			// the store is unreachable: the polls report it, once per poll
			r.Log.Debug("store check failed", "error", "store unavailable")
		}
		if len(restored) == 0 {
			continue
		}
		for i, c := range early {
			if busy[i].Load() {
				continue // the poll under way writes, or records why not
			}
			select {
			case c <- struct{}{}:
			default: // one is already pending
			}
		}
	}
}

// adopt takes over, before the first poll, what the previous process of
// this collector left in the store: its documents, as the last good ones,
// and the runs of its status record, so that a restarted collector (a
// crash, a kill, a roll) still has something to write back if the store
// loses it, and its first status record keeps every domain's last success
// and count of failures instead of forgetting the domains not polled yet.
// Only what a collector of this token wrote and the store validated is
// adopted, so a runner over an empty store has nothing to write back. It
// is best effort, bounded by adoptTimeout: the polls bring good documents
// anyway.
func (r *Runner) adopt(ctx context.Context) {
	if len(r.Jobs) == 0 {
		return
	}
	domains := make([]contract.Domain, len(r.Jobs))
	for i, j := range r.Jobs {
		domains[i] = j.Domain
	}
	rctx, cancel := context.WithTimeout(ctx, adoptTimeout)
	defer cancel()
	docs, _, err := r.Store.ReadAll(rctx, domains...)
	if err != nil {
		return
	}
	statuses, err := r.Store.ReadStatuses(rctx)
	if err != nil {
		statuses = nil
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for d, doc := range docs {
		if _, ok := r.last[d]; !ok {
			r.keepLocked(doc.Envelope)
		}
	}
	prev, ok := statuses[r.Name]
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range domains {
		run, ok := prev.Runs[d]
		if _, polled := r.status.Runs[d]; !ok || polled {
			continue
		}
		if r.status.Runs == nil {
			r.status.Runs = map[contract.Domain]contract.Run{}
		}
		r.status.Runs[d] = run
	}
}

// adoptTimeout bounds adopt's reads of the store at start.
const adoptTimeout = 5 * time.Second

func (r *Runner) keepLocked(env contract.Envelope) {
	if r.last == nil {
		r.last = map[contract.Domain]contract.Envelope{}
	}
	r.last[env.Domain] = env
}

// Restore checks, in one round trip, that the store still holds the last
// good document of each domain and the status record, and writes back at
// once whatever it lost. A document is written back unchanged: the same
// updated_at, so that ages stay honest, and the TTL left to it counted
// from that updated_at, so that it expires no later than the original
// would have; one whose TTL has run out is forgotten instead. The status
// record is written back as the runner holds it. A runner that never had a
// good poll has no document to write back: it invents nothing. A
// written-back document appends nothing to the history either: the time
// the store went without it stays a gap there.
//
// Restore returns what it wrote back (domain names, and "status"), counts
// each in tokendata_collector_republished_total and logs one line when it
// wrote anything. Run calls it every Watch.
func (r *Runner) Restore(ctx context.Context) ([]string, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	now := time.Now()
	var domains []contract.Domain
	for _, j := range r.Jobs {
		env, ok := r.last[j.Domain]
		if !ok {
			continue
		}
		if !now.Before(env.UpdatedAt.Add(j.Timing.TTL)) {
			delete(r.last, j.Domain)
			r.Log.Info("last good document past its TTL; no longer kept", "domain", j.Domain,
				"updated_at", env.UpdatedAt.UTC().Format(time.RFC3339))
			continue
		}
		domains = append(domains, j.Domain)
	}
	st := r.Status()
	name := ""
	if len(st.Runs) > 0 {
		name = r.Name
	}
	lost, statusLost, err := r.Store.Missing(ctx, name, domains...)
	if err != nil {
		return nil, err
	}
	var restored []string
	var errs []error
	for _, d := range lost {
		env := r.last[d]
		ttl := time.Until(env.UpdatedAt.Add(r.job(d).Timing.TTL))
		if ttl <= 0 {
			continue // ran out since the check: gone, as the original
		}
		if err := r.Store.Write(ctx, env, ttl); err != nil {
			errs = append(errs, err)
			continue
		}
		restored = append(restored, string(d))
	}
	if statusLost {
		if err := r.Store.WriteStatus(ctx, st); err != nil {
			errs = append(errs, err)
		} else {
			restored = append(restored, "status")
		}
	}
	for _, rec := range restored {
		r.Metrics.observeRepublish(r.Name, rec)
	}
	if len(restored) > 0 {
		r.Log.Warn("the store lost this collector's records; wrote back the last good ones and polling early",
			"records", restored)
	}
	return restored, errors.Join(errs...)
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
		if res.Upstream != "" {
			run.Upstream = res.Upstream
		}
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

// MaxMessage bounds a message of the status record or of a log line, once
// redacted (a cut made before would leave a piece of a secret
// unrecognised).
const MaxMessage = 512

// Clip bounds msg to MaxMessage bytes, cut at a UTF-8 boundary and marked
// with "…". Redact first.
func Clip(msg string) string {
	if len(msg) > MaxMessage {
		msg = strings.ToValidUTF8(msg[:MaxMessage], "") + "…"
	}
	return msg
}

// text redacts msg, then bounds it.
func (r *Runner) text(msg string) string { return Clip(r.Redactor.Redact(msg)) }

// clean returns a copy of e whose texts carry no secret.
func (r *Runner) clean(e *Error) *Error {
	out := *e
	out.Message, out.Remedy = r.text(e.Message), r.text(e.Remedy)
	return &out
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
		err := r.Store.Commit(ctx, *env, job.Timing.TTL, st, samples...)
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
	if err := r.Store.WriteStatus(context.WithoutCancel(ctx), st); err != nil {
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
	return st
}
