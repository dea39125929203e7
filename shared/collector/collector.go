// Package collector runs a collector's polls: one loop per domain on its
// own interval, retries with backoff and jitter inside a poll, the status
// record after every run, and the metrics every collector exports. A
// collector supplies only what reads its upstream and builds a document.
//
// A failed or invalid poll never overwrites good data: the document is
// written only when Poll returns one without error.
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

	mu     sync.Mutex
	status contract.Status
}

// Run polls every job at once, then each on its own interval, until ctx
// is done. It returns nil on cancellation: failures are recorded, never
// fatal, because a collector stays up while its upstream is down.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, j := range r.Jobs {
		wg.Go(func() {
			t := time.NewTicker(j.Timing.Refresh)
			defer t.Stop()
			for {
				_ = r.RunOnce(ctx, j.Domain)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// RunOnce polls one domain now (with retries), writes the document on
// success and the status record in every case. It returns the poll's
// classified error, or nil; when ctx ends mid-poll it records nothing and
// returns ctx's error.
func (r *Runner) RunOnce(ctx context.Context, d contract.Domain) error {
	var job *Job
	for i := range r.Jobs {
		if r.Jobs[i].Domain == d {
			job = &r.Jobs[i]
		}
	}
	if job == nil {
		return fmt.Errorf("collector %s has no %s job", r.Name, d)
	}
	started := time.Now()
	res, err := r.pollWithRetry(ctx, job)
	if err == nil {
		err = r.write(ctx, job, res)
	}
	if ctx.Err() != nil && err != nil {
		return ctx.Err() // stopping: not a failure of the upstream, nothing recorded
	}
	finished := time.Now()
	run := contract.Run{StartedAt: started.UTC(), FinishedAt: finished.UTC(), OK: err == nil, Upstream: job.Upstream}
	var ce *Error
	if err != nil {
		ce = r.clean(Classify(err))
		run.ErrorKind, run.Error, run.Remedy = ce.Kind, ce.Message, ce.Remedy
	} else {
		run.Note = r.text(res.Note)
		if res.Upstream != "" {
			run.Upstream = res.Upstream
		}
	}
	run = r.record(ctx, d, run)
	r.Metrics.observeRun(r.Name, d, run, finished.Sub(started))
	if ce != nil {
		r.Log.Warn("poll failed", "domain", d, "kind", ce.Kind, "error", ce.Message,
			"consecutive_failures", run.ConsecutiveFailures)
		return ce
	}
	r.Log.Debug("poll ok", "domain", d, "duration", finished.Sub(started).String())
	return nil
}

// maxMessage bounds a message of the status record, once redacted (a
// cut made before would leave a piece of a secret unrecognised).
const maxMessage = 512

// text redacts msg, then bounds it.
func (r *Runner) text(msg string) string {
	msg = r.Redactor.Redact(msg)
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	return msg
}

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

func (r *Runner) write(ctx context.Context, job *Job, res Result) error {
	at := res.UpdatedAt
	if at.IsZero() {
		at = time.Now()
	}
	src := res.Source
	src.Simulated = src.Simulated || r.Simulated
	env, err := contract.NewEnvelope(r.Store.Mint(), job.Domain, at, src, res.Doc)
	if err != nil {
		return &Error{Kind: contract.ErrKindInternal, Message: err.Error()}
	}
	if err := r.Store.Write(ctx, env, job.Timing.TTL); err != nil {
		return &Error{Kind: contract.ErrKindStore, Message: "writing the document to the store failed", Retry: false}
	}
	return nil
}

// record updates the status record and writes it (best effort: a store
// that cannot take the status cannot take documents either, and that is
// already reported).
func (r *Runner) record(ctx context.Context, d contract.Domain, run contract.Run) contract.Run {
	r.mu.Lock()
	if r.status.Runs == nil {
		r.status = contract.Status{Collector: r.Name, Simulated: r.Simulated, Runs: map[contract.Domain]contract.Run{}}
	}
	prev := r.status.Runs[d]
	run.LastSuccessAt = prev.LastSuccessAt
	if run.OK {
		t := run.FinishedAt
		run.LastSuccessAt = &t
	} else {
		run.ConsecutiveFailures = prev.ConsecutiveFailures + 1
	}
	r.status.Runs[d] = run
	st := r.snapshotLocked()
	r.mu.Unlock()
	if err := r.Store.WriteStatus(context.WithoutCancel(ctx), st); err != nil {
		r.Log.Warn("status record not written", "error", "store unavailable")
	}
	return run
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
