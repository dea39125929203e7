package collector

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// The write-back: what a collector holds is written again when the store
// has lost it (see Runner.Restore and Runner.watch).

// watch runs Restore every Watch until ctx is done, and every
// watchRetry while the store does not answer, so that what it lost is
// back within about a second of its return rather than a whole Watch
// later. After anything was written back, it asks every job not polling
// at that moment for an early poll (a poll under way sees the write-back
// itself: see Run).
func (r *Runner) watch(ctx context.Context, early []chan struct{}, busy []atomic.Bool) {
	every := r.Watch
	if every <= 0 {
		every = DefaultWatch
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		restored, err := r.Restore(ctx)
		next := every
		if err != nil && ctx.Err() == nil {
			// the store is unreachable: the polls report it, once per poll
			r.Log.Debug("store check failed", "error", "store unavailable")
			next = min(every, watchRetry)
		}
		t.Reset(next)
		if len(restored) == 0 {
			continue
		}
		r.restores.Add(1) // before busy is read: see Run
		for i, c := range early {
			if busy[i].Load() {
				continue // the poll under way writes, or polls again
			}
			select {
			case c <- struct{}{}:
			default: // one is already pending
			}
		}
	}
}

// watchRetry is how soon the watch checks the store again after a check
// that failed.
const watchRetry = time.Second

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

// Last returns the last good envelope of domain d: the last one this
// runner wrote, or the one it adopted from the store at start (see
// adopt). A collector reads from it the slot of the figure it last
// published, below which no ledger answer is taken.
func (r *Runner) Last(d contract.Domain) (contract.Envelope, bool) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	env, ok := r.last[d]
	return env, ok
}

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
// wrote anything. Run calls it every Watch. The check and its writes are
// bounded together by StoreTimeout.
func (r *Runner) Restore(ctx context.Context) ([]string, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	ctx, cancel := r.storeCtx(ctx)
	defer cancel()
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
