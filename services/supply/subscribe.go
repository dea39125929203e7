package supply

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/pubsub"
)

// Subscriptions to the mint account, one per ledger node, over Solana's
// PubSub WebSocket (SOLANA_WS_URLS): a change of the mint reaches the API
// in seconds instead of at the next SUPPLY_REFRESH.
//
// A notification never publishes anything by itself: it pokes the supply
// job (collector.Runner.Poke), whose poll reads every node through the
// cross-check, so only a figure a quorum confirms is published. Other
// nodes may not have reached the notified slot yet, so the collector pokes
// again after 250 ms, 500 ms, 1 s, 2 s, 2 s… until the published supply's
// slot reaches the notified one or pushBound passes; notifications of
// several nodes about one change coalesce into that one chase. Polling on
// SUPPLY_REFRESH stays as the safety net, and a subscription down never
// makes the service degraded.
//
// The sockets are shared/pubsub's: at most maxSocketMessage per message,
// a ping every SUPPLY_WS_PING, a socket silent for SUPPLY_WS_SILENCE
// dropped, reconnection with exponential backoff and ±50 % jitter
// (SUPPLY_WS_BACKOFF up to SUPPLY_WS_BACKOFF_MAX). A node that refuses the
// upgrade (HTTP 4xx: a provider without PubSub) or the method is
// "unsupported", polled as before, and tried again only every
// SUPPLY_WS_BACKOFF_MAX.

// maxSocketMessage bounds one PubSub message: a mint account notification
// is well under 2 KiB, even base64 with Token-2022 metadata.
const maxSocketMessage = 1 << 20

// pushBound is how long the collector keeps poking after a notification
// for the published slot to reach the notified one.
const pushBound = 10 * time.Second

// pushDelays are the waits between pokes of one chase; the last repeats.
var pushDelays = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// nodeSub is the subscription to one node.
type nodeSub struct {
	node int
	url  config.Secret // "": off

	// guarded by Collector.subMu
	rec contract.LedgerSubscription
}

// initSubscriptions sets up a nodeSub per node from SOLANA_WS_URLS.
func (c *Collector) initSubscriptions(common config.Common) {
	now := time.Now().UTC()
	for i, u := range common.LedgerWSs() {
		s := &nodeSub{node: i + 1, url: u, rec: contract.LedgerSubscription{Node: i + 1, State: contract.SubscriptionConnecting, Since: now}}
		if u == "" {
			s.rec.State = contract.SubscriptionOff
		}
		c.subs = append(c.subs, s)
		c.metrics.ObserveSubscription(s.node, s.rec.State)
	}
	c.metrics.InitSubscriptions(len(c.subs))
	c.runner.SetSubscriptions(c.subRecords())
}

// subRecords is a copy of every node's subscription record.
func (c *Collector) subRecords() []contract.LedgerSubscription {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	out := make([]contract.LedgerSubscription, len(c.subs))
	for i, s := range c.subs {
		out[i] = s.rec
	}
	return out
}

// setState moves s to state (with the error that ended the last socket,
// if any) and writes the status record at once when the state changed.
func (c *Collector) setState(ctx context.Context, s *nodeSub, state string, cause error) {
	c.subMu.Lock()
	changed := s.rec.State != state
	if changed {
		s.rec.State, s.rec.Since = state, time.Now().UTC()
	}
	if cause != nil {
		s.rec.Error = collector.Clip(c.runner.Redactor.Redact(cause.Error()))
	} else if state == contract.SubscriptionConnected {
		s.rec.Error = ""
	}
	c.subMu.Unlock()
	c.metrics.ObserveSubscription(s.node, state)
	if !changed {
		c.runner.SetSubscriptions(c.subRecords())
		return
	}
	c.log.Info("ledger subscription", "node", s.node, "state", state, "error", c.runner.Redactor.Redact(errText(cause)))
	c.runner.WriteSubscriptions(ctx, c.subRecords())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// runSubscriptions keeps every node's subscription until ctx ends, and
// chases each notified change until it is published.
func (c *Collector) runSubscriptions(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range c.subs {
		if s.url != "" {
			wg.Go(func() { c.keep(ctx, s) })
		}
	}
	wg.Go(func() { c.chase(ctx) })
	wg.Go(func() { c.recordNotifications(ctx) })
	wg.Wait()
}

// recordNotifications writes the status record when a notification came,
// so that /api/status shows each node's last notification as it is: the
// poll a change pokes writes the record too, but a node that tells that
// change after the poll (it pokes no other: the same slot) would show an
// older notification until the next SUPPLY_REFRESH. Notifications that
// come while a write is under way coalesce into one write after it.
func (c *Collector) recordNotifications(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.noted:
			c.runner.WriteSubscriptions(ctx, c.subRecords())
		}
	}
}

// keep opens node s's socket, again and again, until ctx ends.
func (c *Collector) keep(ctx context.Context, s *nodeSub) {
	cfg := pubsub.Config{URL: s.url, Ping: c.cfg.WSPing, Silence: c.cfg.WSSilence,
		Backoff: c.cfg.WSBackoff, BackoffMax: c.cfg.WSBackoffMax, MaxMessage: maxSocketMessage}
	req := pubsub.Request{Method: "accountSubscribe",
		Params: []any{c.mint.String(), map[string]string{"commitment": c.cfg.Commitment, "encoding": "base64"}}}
	pubsub.Keep(ctx, cfg, req, pubsub.Hooks{
		State: func(state string, cause error) { c.setState(ctx, s, state, cause) },
		Reconnect: func() {
			c.subMu.Lock()
			s.rec.Reconnects++
			c.subMu.Unlock()
			c.metrics.ObserveReconnect(s.node)
			c.runner.SetSubscriptions(c.subRecords())
		},
		Notification: func(msg []byte, subID uint64) error {
			slot, err := notification(msg, subID)
			if err == nil {
				c.notified(s, slot)
			}
			return err
		},
	})
}

// notification reads an accountNotification of subscription subID and
// returns its context slot, or why the frame is not one.
func notification(msg []byte, subID uint64) (uint64, error) {
	var m pubsub.Notification
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, errors.New("the node sent a frame that is not JSON")
	}
	if m.Method != "accountNotification" {
		return 0, errors.New("the node sent a message that is not an accountNotification")
	}
	if m.Params.Subscription != subID || m.Params.Result.Context.Slot == 0 || len(m.Params.Result.Value) == 0 {
		return 0, errors.New("the node sent an accountNotification of the wrong shape")
	}
	return m.Params.Result.Context.Slot, nil
}

// notified records a notification of node s at slot and starts (or
// extends) the chase of that change.
func (c *Collector) notified(s *nodeSub, slot uint64) {
	now := time.Now().UTC()
	c.subMu.Lock()
	s.rec.LastNotificationAt, s.rec.LastNotificationSlot = &now, slot
	if slot > c.pushSlot {
		c.pushSlot = slot
	}
	c.pushAt = now
	c.subMu.Unlock()
	c.metrics.ObserveNotification(s.node)
	c.runner.SetSubscriptions(c.subRecords())
	select {
	case c.pushes <- struct{}{}:
	default: // a chase is pending: it reads pushSlot
	}
	select {
	case c.noted <- struct{}{}:
	default: // a write is pending: it reads the records then
	}
}

// chase pokes the supply job at each notified change, then again with a
// growing delay until the published slot reaches the notified one, or
// pushBound after the last notification. Notifications of the same slot
// (the other nodes telling the same change) add no poll.
func (c *Collector) chase(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.pushes:
		}
		var poked uint64 // the highest notified slot poked for
		step, timer := 0, false
		for {
			c.subMu.Lock()
			target, last := c.pushSlot, c.pushAt
			c.subMu.Unlock()
			if time.Since(last) > pushBound {
				break
			}
			published, _ := c.lastPublished(contract.DomainSupply)
			switch {
			case target > poked:
				// A change not poked for yet: poll at once, even when
				// the published slot already reaches it (a change within
				// one slot, as a simulated ledger makes, is read by the
				// next poll alone).
				c.runner.Poke(contract.DomainSupply)
				poked, step = target, 0
			case published >= target:
				poked = 0
			case timer: // some node had not reached it: again
				c.runner.Poke(contract.DomainSupply)
			}
			if poked == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-c.pushes: // a newer slot pokes at once; the same one waits
				timer = false
			case <-time.After(pushDelays[min(step, len(pushDelays)-1)]):
				step, timer = step+1, true
			}
		}
	}
}
