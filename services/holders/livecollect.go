package holders

// The collector's live count (HOLDERS_LIVE): one PubSub socket
// to the holders node, subscribed to the mint's token accounts
// (programSubscribe, with the enumeration's filters and commitment), feeds
// a Follower (services/holders/follow); the holders job's poll anchors it
// on a getProgramAccounts enumeration (Collector.Anchor) and, once
// anchored, publishes the count it keeps without reading the node. A
// publisher pokes the job at most every HOLDERS_PUBLISH_INTERVAL while the
// count changes; HOLDERS_REFRESH still writes the document when nothing
// does.
//
// A socket that ends (dropped, silent, an unreadable notification, a slot
// that goes back) ends the live count: the poll it pokes enumerates as
// without a subscription (method getProgramAccounts) or, once the next
// socket is subscribed, anchors the count again. Every HOLDERS_RESYNC an
// enumeration re-anchors it and the two counts are compared at the same
// slot (Follower.Begin); a difference is published as a warning and the
// next resync comes after HOLDERS_REFRESH.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tokendata/tokendata/services/holders/follow"
	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/pubsub"
)

// maxBuffered bounds the notifications buffered during an enumeration
// that anchors the count (88 bytes each: 200,000 is about 17 MiB, three
// minutes of 1,000 changes a second).
const maxBuffered = 200_000

// maxNotification bounds one PubSub message: a token account
// notification is under 1 KiB, a Token-2022 account with extensions a
// few.
const maxNotification = 64 << 10

// liveState is the collector's live count as it runs: its socket's URL
// and record, its Follower, and the times of its anchors and resyncs.
type liveState struct {
	url config.Secret
	f   *follow.Follower
	// programKnown is closed once the token program is resolved: the
	// subscription needs it.
	programKnown chan struct{}
	knownOnce    sync.Once
	// settled is closed once the subscription was first confirmed or
	// refused; polled is set by the first poll (awaitSubscription).
	settled    chan struct{}
	settleOnce sync.Once
	polled     atomic.Bool
	// bg runs the resyncs (startResync); Run waits for it.
	bg sync.WaitGroup

	mu         sync.Mutex
	anchoredAt time.Time // when the current anchor's enumeration started
	// anchorSeconds is how long that enumeration took.
	anchorSeconds float64
	nextResync    time.Time
	lastResync    *contract.HoldersResync // the last resync seen by a poll
	// resync is closed when the resync under way ends (nil: none);
	// resynced is set by one that re-anchored, until a poll takes it.
	resync   chan struct{}
	resynced bool
	sub      contract.LedgerSubscription
	// notedAt is when the last notification was taken: the status
	// record's last_notification_at, with the live count's slot, at each
	// publication (not at each notification: thousands a second).
	notedAt time.Time
}

// initLive sets up the live count when on (Config.LiveOn).
func (c *Collector) initLive(common config.Common, on bool) {
	if !on {
		return
	}
	u := c.cfg.WSURL
	if u == "" {
		u = config.DeriveWS(common.HoldersRPC())
	}
	c.live = &liveState{url: u, programKnown: make(chan struct{}), settled: make(chan struct{}),
		sub: contract.LedgerSubscription{Node: 1, State: contract.SubscriptionConnecting, Since: time.Now().UTC()}}
	if c.program != "" {
		c.live.knownOnce.Do(func() { close(c.live.programKnown) })
	}
	c.metrics.setLive(contract.SubscriptionConnecting, false)
	c.runner.SetSubscriptions([]contract.LedgerSubscription{c.live.sub})
}

// programResolved tells the live count the program is known.
func (c *Collector) programResolved() {
	if c.live != nil {
		c.live.knownOnce.Do(func() { close(c.live.programKnown) })
	}
}

// runLive keeps the subscription and the publisher until ctx ends.
func (c *Collector) runLive(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-c.live.programKnown:
	}
	c.mu.Lock()
	program := c.program
	c.mu.Unlock()
	f := follow.New(mustOwner(c.mint), program, c.cfg.MaxMemoryBytes, maxBuffered)
	c.live.mu.Lock() // the poll reads it under the lock (follower)
	c.live.f = f
	c.live.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { c.subscribe(ctx, program) })
	wg.Go(func() { c.publish(ctx) })
	wg.Wait()
}

// follower is the live count's follower, nil before the program is known.
func (c *Collector) follower() *follow.Follower {
	if c.live == nil {
		return nil
	}
	c.live.mu.Lock()
	defer c.live.mu.Unlock()
	return c.live.f
}

// subscribe keeps the socket: programSubscribe (wire.ProgramSubscribeParams)
// with the enumeration's filters and the reads' commitment, so that
// notifications and enumerations see one ledger.
func (c *Collector) subscribe(ctx context.Context, program string) {
	cfg := pubsub.Config{URL: c.live.url, Ping: c.cfg.WSPing, Silence: c.cfg.WSSilence,
		Backoff: c.cfg.WSBackoff, BackoffMax: c.cfg.WSBackoffMax, MaxMessage: maxNotification}
	req := pubsub.Request{Method: "programSubscribe", Params: wire.ProgramSubscribeParams(program, c.mint, c.cfg.Commitment)}
	f := c.live.f
	pubsub.Keep(ctx, cfg, req, pubsub.Hooks{
		State: func(state string, cause error) {
			if state == contract.SubscriptionConnected {
				f.Connected()
			} else {
				f.Lost()
			}
			// A new socket is anchored at once, and a live count that
			// ended is replaced by an enumeration at once; a failed
			// attempt to reconnect changes nothing to publish.
			if prev := c.subState(ctx, state, cause); state == contract.SubscriptionConnected || prev == contract.SubscriptionConnected {
				c.runner.Poke(contract.DomainHolders)
			}
		},
		Reconnect: func() {
			c.live.mu.Lock()
			c.live.sub.Reconnects++
			c.live.mu.Unlock()
		},
		Notification: func(msg []byte, _ uint64) error {
			err := f.Notify(msg)
			if err == nil {
				c.metrics.liveNotes.Inc()
				c.live.mu.Lock()
				c.live.notedAt = time.Now()
				c.live.mu.Unlock()
			} else {
				c.log.Warn("holders subscription: the live count stops until the next anchor", "error", c.runner.Redactor.Redact(err.Error()))
			}
			return err
		},
	})
}

// subState records the subscription's state in the status record and
// returns the state before.
func (c *Collector) subState(ctx context.Context, state string, cause error) (prev string) {
	c.live.mu.Lock()
	prev = c.live.sub.State
	changed := prev != state
	if changed {
		c.live.sub.State, c.live.sub.Since = state, time.Now().UTC()
	}
	if cause != nil {
		c.live.sub.Error = collector.Clip(c.runner.Redactor.Redact(cause.Error()))
	} else if state == contract.SubscriptionConnected {
		c.live.sub.Error = ""
	}
	rec := c.live.sub
	c.live.mu.Unlock()
	if state != contract.SubscriptionConnecting {
		c.live.settleOnce.Do(func() { close(c.live.settled) })
	}
	c.metrics.setLive(state, false)
	if !changed {
		c.runner.SetSubscriptions([]contract.LedgerSubscription{rec})
		return prev
	}
	c.log.Info("holders subscription", "state", state, "error", c.runner.Redactor.Redact(errText(cause)))
	c.runner.WriteSubscriptions(ctx, []contract.LedgerSubscription{rec})
	return prev
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// publish pokes the holders job at most every HOLDERS_PUBLISH_INTERVAL
// while the live count changed, a resync's comparison can be made or a
// resync is due.
func (c *Collector) publish(ctx context.Context) {
	t := time.NewTicker(c.cfg.PublishInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		c.live.mu.Lock()
		resync := !c.live.anchoredAt.IsZero() && !now.Before(c.live.nextResync)
		c.live.mu.Unlock()
		if c.live.f.Due(now) || (resync && c.live.f.Following()) {
			c.runner.Poke(contract.DomainHolders)
		}
	}
}

// livePoll is what a poll with a live count (pollLive) gives besides its
// error.
type livePoll struct {
	// result is the document and its source, when the poll answered and
	// did not fail.
	result collector.Result
	// answered is false when the poll must enumerate as without a
	// subscription (none is subscribed).
	answered bool
	// enumerated says whether the poll read an enumeration: its anchor's,
	// or that of a resync that ended since the last poll (takeResynced).
	enumerated bool
}

// pollLive is the holders poll with a live count: the count when it is
// live (a resync that is due starts beside it, startResync), else an
// anchor.
func (c *Collector) pollLive(ctx context.Context) (livePoll, error) {
	c.awaitSubscription(ctx)
	f := c.follower()
	if f == nil {
		return livePoll{}, nil
	}
	now := time.Now()
	// The last resync's comparison is made, or still pending (within
	// ResyncGrace), before the next resync is decided: one started
	// sooner (due HOLDERS_RESYNC after the last began, before the grace
	// ends) made its own comparison and replaced a difference at once.
	r, comparing := f.Compared(now)
	checking := c.crossRunning()
	c.live.mu.Lock()
	c.noteResyncLocked(r)
	due := !now.Before(c.live.nextResync) && !checking && !comparing
	running := c.live.resync
	c.live.mu.Unlock()
	if due && running == nil && f.Following() {
		running = c.startResync(ctx, f, now)
	}
	if running != nil {
		if lc, _, live := f.Take(); live {
			return livePoll{result: c.liveResult(lc), answered: true}, nil
		}
		// The live count ended during the resync (its socket did): its
		// enumeration ends too; then this poll anchors on the next.
		select {
		case <-running:
		case <-ctx.Done():
			return livePoll{answered: true}, ctx.Err()
		}
		return c.pollLive(ctx)
	}
	if !due {
		if lc, _, live := f.Take(); live {
			return livePoll{result: c.liveResult(lc), answered: true, enumerated: c.takeResynced()}, nil
		}
	}
	if !f.Subscribed() {
		c.metrics.setLive("", false)
		return livePoll{}, nil
	}
	doc, err := c.Anchor(ctx, f)
	if err != nil {
		f.EndResync()
		c.metrics.setLive("", false)
		if errors.Is(err, follow.ErrNotFollowing) && doc.TokenAccounts > 0 {
			// The socket ended during the enumeration: its count stands
			// as an enumeration's.
			return livePoll{result: c.enumerationResult(doc, now), answered: true, enumerated: true}, nil
		}
		return livePoll{answered: true, enumerated: true}, err
	}
	c.anchored(doc, now, "holders anchored")
	lc, _, live := f.Take()
	if !live {
		return livePoll{result: c.enumerationResult(doc, now), answered: true, enumerated: true}, nil
	}
	return livePoll{result: c.liveResult(lc), answered: true, enumerated: true}, nil
}

// startResync starts a resync of the live count (due at now) beside the
// polls, which go on publishing the live count during its enumeration
// (in the poll, it held every publication for the enumeration's length:
// 6 s at 1,000,000 accounts, docs/benchmarks.md). It returns a channel
// closed when the resync has ended; its end pokes a poll, which publishes
// the comparison and runs the cross-check of an enumeration.
func (c *Collector) startResync(ctx context.Context, f *follow.Follower, now time.Time) chan struct{} {
	done := make(chan struct{})
	c.live.mu.Lock()
	c.live.resync = done
	c.live.mu.Unlock()
	c.live.bg.Go(func() {
		defer close(done)
		doc, err := c.Anchor(ctx, f)
		if err == nil {
			c.anchored(doc, now, "holders re-anchored")
		} else {
			f.EndResync()
			if ctx.Err() == nil {
				c.log.Warn("holders resync failed; the live count goes on", "error", c.runner.Redactor.Redact(err.Error()))
			}
			// A node that refuses to enumerate refuses the next restart's
			// anchor too: the gauge (the holders-unavailable alert) says so
			// while the live count goes on.
			if ce := (*collector.Error)(nil); errors.As(err, &ce) && ce.Kind == contract.ErrKindUnsupported {
				c.metrics.unsupported.Set(1)
			}
		}
		c.live.mu.Lock()
		c.live.resync = nil
		if err != nil {
			c.live.nextResync = now.Add(c.timing().Refresh)
		} else {
			c.live.resynced = true
		}
		c.live.mu.Unlock()
		c.runner.Poke(contract.DomainHolders)
	})
	return done
}

// anchored records an anchor whose enumeration (doc) started at started:
// its metrics, when the next resync is due, and a log line (msg).
func (c *Collector) anchored(doc contract.Holders, started time.Time, msg string) {
	c.metrics.done(doc, time.Since(started))
	c.live.mu.Lock()
	c.live.anchoredAt, c.live.nextResync = started.UTC(), started.Add(c.cfg.Resync)
	c.live.anchorSeconds = float64(time.Since(started).Round(time.Millisecond)) / float64(time.Second)
	c.live.mu.Unlock()
	c.log.Info(msg, "holders", doc.Holders, "token_accounts", doc.TokenAccounts, "slot", doc.Slot,
		"duration", time.Since(started).String())
}

// resyncRunning says whether a resync's enumeration runs now.
func (c *Collector) resyncRunning() bool {
	c.live.mu.Lock()
	defer c.live.mu.Unlock()
	return c.live.resync != nil
}

// takeResynced reports, once, that a resync ended with a new anchor
// since the last poll (that poll then counts as an enumeration's).
func (c *Collector) takeResynced() bool {
	c.live.mu.Lock()
	defer c.live.mu.Unlock()
	r := c.live.resynced
	c.live.resynced = false
	return r
}

// liveStartWait bounds how long the first poll waits for the
// subscription (awaitSubscription).
const liveStartWait = 5 * time.Second

// awaitSubscription is the first poll's: with the program resolved (the
// subscription needs it), it waits up to liveStartWait for the node to
// confirm or refuse the subscription, so that the first enumeration
// anchors the live count. Without the wait the first poll ran before the
// socket was up and made an enumeration of its own, and the anchor a
// second one: at start-up the process read the token's accounts twice,
// took twice as long to be live (12 to 16 s at 1,000,000 accounts
// instead of 6) and held the plain count's owner set beside the tally
// (docs/benchmarks.md). A node whose socket does not answer costs the
// first figure liveStartWait.
func (c *Collector) awaitSubscription(ctx context.Context) {
	if c.live.polled.Swap(true) {
		return
	}
	if _, err := c.resolveProgram(ctx); err != nil {
		return // the poll's enumeration reports it
	}
	t := time.NewTimer(liveStartWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-c.live.settled:
	}
}

// noteResyncLocked takes a resync's comparison r (nil: none yet) once: its
// metrics, its log line, and after a difference the next resync, with
// c.live.mu held.
func (c *Collector) noteResyncLocked(r *contract.HoldersResync) {
	if r == nil || r == c.live.lastResync {
		return
	}
	c.live.lastResync = r
	c.metrics.resynced(*r)
	level := c.log.Info
	if !r.Agreed {
		level = c.log.Warn
		// A difference is checked again HOLDERS_REFRESH after the
		// comparison, not in HOLDERS_RESYNC.
		c.live.nextResync = r.CheckedAt.Add(c.timing().Refresh)
	}
	level("holders resync compared", "agreed", r.Agreed, "live", r.Live, "enumerated", r.Enumerated, "slot", r.Slot)
}

// liveResult is the document of the live count lc.
func (c *Collector) liveResult(lc follow.LiveCount) collector.Result {
	c.live.mu.Lock()
	c.noteResyncLocked(lc.Resync)
	var rec []contract.LedgerSubscription
	if !c.live.notedAt.IsZero() && lc.Applied > 0 {
		at := c.live.notedAt.UTC()
		c.live.sub.LastNotificationAt, c.live.sub.LastNotificationSlot = &at, lc.Slot
		rec = []contract.LedgerSubscription{c.live.sub}
	}
	doc := contract.Holders{Holders: lc.Holders, TokenAccounts: lc.TokenAccounts, NonZeroAccounts: lc.NonZeroAccounts,
		Method: contract.HoldersMethodLive, Queries: []string{}, Slot: lc.Slot, DurationSeconds: c.live.anchorSeconds,
		Live: &contract.HoldersLive{AnchorMethod: contract.HoldersMethodGPA, AnchorSlot: lc.Anchor, AnchoredAt: c.live.anchoredAt,
			AnchorTokenAccounts: lc.Seeded, Notifications: lc.Applied, NextResyncAt: c.live.nextResync.UTC(), Resync: lc.Resync}}
	c.live.mu.Unlock()
	if rec != nil {
		c.runner.SetSubscriptions(rec) // written with this poll's status record
	}
	if program, _ := c.knownProgram(); program != "" {
		for _, q := range wire.Queries(program, c.mint) {
			doc.Queries = append(doc.Queries, q.Description)
		}
	}
	if r := lc.Resync; r != nil && !r.Agreed {
		doc.Warnings = []contract.Warning{{Code: contract.WarnHoldersLiveDiffered,
			Message: resyncReason(*r)}}
	}
	c.metrics.setLive("", true)
	src := contract.Source{Name: contract.UpstreamSolanaRPC, Method: contract.HoldersMethodLive, Slot: lc.Slot, Commitment: c.cfg.Commitment}
	return collector.Result{Doc: doc, Source: src, Samples: contract.HoldersSamples(doc)}
}

// enumerationResult is the document of an enumeration made to anchor a
// count that did not become live.
func (c *Collector) enumerationResult(doc contract.Holders, started time.Time) collector.Result {
	doc.DurationSeconds = float64(time.Since(started).Round(time.Millisecond)) / float64(time.Second)
	src := contract.Source{Name: contract.UpstreamSolanaRPC, Method: contract.HoldersMethodGPA, Slot: doc.Slot, Commitment: c.cfg.Commitment}
	return collector.Result{Doc: doc, Source: src, Samples: contract.HoldersSamples(doc)}
}

// resyncReason says a resync's difference in words.
func resyncReason(r contract.HoldersResync) string {
	return fmt.Sprintf("the live holder count (%d) differed from the enumeration that re-anchored it (%d) at slot %d; the enumeration's count is published and followed from there",
		r.Live, r.Enumerated, r.Slot)
}

// knownProgram is the resolved token program, "" before it is known.
func (c *Collector) knownProgram() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.program, c.program != ""
}

// timing is the holders domain's timing.
func (c *Collector) timing() contract.Timing { return c.runner.Jobs[0].Timing }

// mustOwner decodes a mint already checked by New.
func mustOwner(mint string) tally.Owner {
	var o tally.Owner
	if err := wire.DecodeAddress(mint, &o); err != nil {
		panic("holders: mint checked by New does not decode: " + err.Error())
	}
	return o
}
