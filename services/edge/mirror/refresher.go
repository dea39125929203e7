package mirror

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Refresher keeps the snapshot current until ctx is done: it re-reads the
// store when a collector publishes an update, every SnapshotPoll, and
// renders the view for the next moment a domain crosses its stale-after
// or its TTL shortly before it, swapping it in at that moment (ahead.go). A poll
// fetches only the documents whose size or expiry moved; a notification
// also fetches the domains it names.
func (s *Mirror) Refresher(ctx context.Context) error {
	var updates <-chan contract.Domain
	var closeSub func() error
	subscribe := func() {
		ch, c, err := s.store.Updates(ctx)
		if err != nil {
			s.log.Warn("update notifications unavailable; polling only", "error", s.Redact(err.Error()))
			return
		}
		updates, closeSub = ch, c
	}
	// Subscribe before the first read: an update published while that read
	// and its render run (the edge is ready once it has read) is queued,
	// not lost until the next poll.
	subscribe()
	defer func() {
		if closeSub != nil {
			_ = closeSub()
		}
	}()
	s.Refresh(ctx)
	// History reads from here on run beside the refreshes.
	hctx, stopHistory := context.WithCancel(ctx)
	var hist sync.WaitGroup
	hist.Go(func() { s.historyLoop(hctx) })
	s.histAsync.Store(true)
	defer func() {
		s.histAsync.Store(false)
		stopHistory()
		hist.Wait()
	}()
	poll := time.NewTicker(s.cfg.SnapshotPoll)
	defer poll.Stop()
	change := time.NewTimer(time.Hour)
	defer change.Stop()
	prep := time.NewTimer(time.Hour)
	defer prep.Stop()
	for {
		change.Reset(s.untilNextChange())
		prep.Reset(s.untilPrerender())
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-updates:
			if !ok { // subscription ended: close it (its connection, its health check), poll, and try again on the next tick
				_ = closeSub()
				updates, closeSub = nil, nil
				continue
			}
			s.refresh(ctx, drain(updates, d)...)
		case <-poll.C:
			if updates == nil {
				subscribe()
			}
			s.refresh(ctx)
		case <-prep.C:
			s.Prerender()
		case <-change.C:
			s.crossBoundary()
		}
	}
}

// drain empties ch of queued notifications and returns the domains they
// name, first included: one refresh reads them all.
func drain(ch <-chan contract.Domain, first contract.Domain) []contract.Domain {
	ds := []contract.Domain{first}
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				return ds
			}
			if !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		default:
			return ds
		}
	}
}

func (s *Mirror) untilNextChange() time.Duration {
	next := s.view.Load().NextChange
	if next.IsZero() {
		return time.Hour
	}
	d := next.Sub(s.now())
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}
