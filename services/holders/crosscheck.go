package holders

// The cross-check: with HOLDERS_CROSSCHECK_RPC_URL set, the holders are
// counted a second time from that source and the two counts compared, so
// that one node's index cannot publish a wrong count unnoticed. Scans
// (no live count) check every HOLDERS_CROSSCHECK_EVERY-th poll, right
// after the primary's count; a live count (the default where it can be)
// is checked every HOLDERS_CROSSCHECK_EVERY × HOLDERS_REFRESH, beside the
// polls.
// Two counts at slots d apart may differ by the churn those slots allow,
// floor + ceil(per1000 × d / 1000) (docs/decisions.md); beyond it the
// verdict is disagree: the primary's count is still the one published
// (never an average, never the second's), with the cross-check and the
// holders_sources_disagree warning, and the next poll checks again. The
// documents between two checks carry the last check.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// crossCheck is the second holder source and the state of its checks.
type crossCheck struct {
	src source

	mu sync.Mutex
	// polls counts the polls since the last check.
	polls int
	// last is the last check (adopted from the published document at
	// start); nil before the first.
	last *contract.HoldersCheck
	// running is set while a live count's check runs beside the polls.
	running bool
}

// maxReason bounds a cross-check's reason (it may quote a node's error).
const maxReason = 400

// crossCheck counts the holders from the second source when a check is
// due and returns res with the document's cross-check (and warning) set.
// The second source's failure never fails the poll: the verdict is then
// not_checked. After an enumeration a check is due every
// HOLDERS_CROSSCHECK_EVERY-th such poll, in the poll. A live count's
// polls read nothing from the node and come every
// HOLDERS_PUBLISH_INTERVAL, so for them a check is due by time, every
// HOLDERS_CROSSCHECK_EVERY × HOLDERS_REFRESH (the same hour as the scans'
// every fourth poll), and runs beside the polls, as a resync does: the
// second source's enumeration holds no publication; its end pokes a poll,
// which publishes it. The polls between carry the last check.
func (c *Collector) crossCheck(ctx context.Context, res collector.Result, enumerated bool) collector.Result {
	doc, ok := res.Doc.(contract.Holders)
	if !ok {
		return res
	}
	x := c.cross
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.last == nil {
		x.last = c.publishedCheck()
	}
	if enumerated {
		x.polls++
		// A check running beside the polls (live) is this one: it
		// publishes when it ends, and two at once would hold two sets.
		if !x.running && (x.last == nil || x.last.Verdict != contract.HoldersAgreed || x.polls >= c.cfg.CrossCheckEvery) {
			x.polls = 0
			x.last = c.checkSecond(ctx, doc)
		}
	} else if !x.running && !c.resyncRunning() && c.liveCheckDue(x.last, time.Now()) {
		x.running = true
		counted := doc // as it is now: this poll goes on to set its check
		counted.Warnings = nil
		c.live.bg.Go(func() {
			chk := c.checkSecond(ctx, counted)
			x.mu.Lock()
			x.last, x.running = chk, false
			x.mu.Unlock()
			c.runner.Poke(contract.DomainHolders)
		})
	}
	if x.last != nil {
		chk := *x.last
		doc.CrossCheck = &chk
		if chk.Verdict == contract.HoldersDisagree {
			doc.Warnings = append(doc.Warnings, contract.Warning{Code: contract.WarnHoldersSourcesDisagree, Message: chk.Reason})
		}
	}
	res.Doc = doc
	return res
}

// crossRunning says whether a live count's check runs now: a resync
// waits for it (and it for a resync), so that the process holds at most
// one enumeration's set beside the live tally.
func (c *Collector) crossRunning() bool {
	if c.cross == nil {
		return false
	}
	c.cross.mu.Lock()
	defer c.cross.mu.Unlock()
	return c.cross.running
}

// liveCheckDue says whether a live count's poll at now is due a check:
// HOLDERS_CROSSCHECK_EVERY × HOLDERS_REFRESH after the last began, or
// HOLDERS_REFRESH after one that did not agree (a tenth of HOLDERS_REFRESH
// early, as the polls that come every HOLDERS_REFRESH may).
func (c *Collector) liveCheckDue(last *contract.HoldersCheck, now time.Time) bool {
	if last == nil {
		return true
	}
	refresh := c.timing().Refresh
	every := time.Duration(c.cfg.CrossCheckEvery) * refresh
	if last.Verdict != contract.HoldersAgreed {
		every = refresh
	}
	return now.Sub(last.CheckedAt) >= every-refresh/10
}

// checkSecond counts the holders from the second source and compares them
// with doc's: the check, logged and in the metrics.
func (c *Collector) checkSecond(ctx context.Context, doc contract.Holders) *contract.HoldersCheck {
	x := c.cross
	started := time.Now()
	second, err := c.count(ctx, x.src, started)
	chk := compareCounts(doc, second, err, c.cfg.CrossCheckChurnFloor, c.cfg.CrossCheckChurnPer1000Slots)
	if err != nil {
		chk.Reason = config.Redact(chk.Reason, c.secret, c.cfg.CrossCheckRPCURL)
		if len(chk.Reason) > maxReason {
			chk.Reason = chk.Reason[:maxReason]
		}
	}
	chk.CheckedAt = started.UTC()
	c.metrics.crossChecked(chk)
	level := c.log.Info
	if chk.Verdict != contract.HoldersAgreed {
		level = c.log.Warn
	}
	level("holders cross-checked", "verdict", chk.Verdict, "primary", chk.Primary.Holders, "primary_slot", chk.Primary.Slot,
		"secondary", chk.Secondary.Holders, "secondary_slot", chk.Secondary.Slot, "allowed_churn", chk.AllowedChurn,
		"duration", time.Since(started).String())
	return &chk
}

// publishedCheck is the cross-check of the document last published (after
// a restart, the one adopted from the store), or nil.
func (c *Collector) publishedCheck() *contract.HoldersCheck {
	env, ok := c.runner.Last(contract.DomainHolders)
	if !ok {
		return nil
	}
	var h contract.Holders
	if json.Unmarshal(env.Data, &h) != nil {
		return nil
	}
	return h.CrossCheck
}

// AllowedChurn is the difference two holder counts slotDistance slots apart
// may show: floor + ceil(per1000 × slotDistance / 1000), saturating.
func AllowedChurn(slotDistance uint64, floor, per1000 int64) uint64 {
	hi, lo := bits.Mul64(slotDistance, uint64(max(per1000, 0)))
	if hi != 0 {
		return math.MaxUint64
	}
	grow := lo / 1000
	if lo%1000 != 0 {
		grow++
	}
	sum, carry := bits.Add64(uint64(max(floor, 0)), grow, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return sum
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// compareCounts is the verdict of the primary's document against the
// second source's (or its failure err).
func compareCounts(primary, second contract.Holders, err error, floor, per1000 int64) contract.HoldersCheck {
	chk := contract.HoldersCheck{
		Primary: contract.HoldersCount{Method: primary.Method, Holders: primary.Holders, Slot: primary.Slot},
	}
	if err != nil {
		ce := collector.Classify(err)
		chk.Verdict, chk.ErrorKind = contract.HoldersNotChecked, ce.Kind
		chk.Reason = fmt.Sprintf("the second holder source failed (%s): %s; the primary's count is published unconfirmed", ce.Kind, ce.Message)
		return chk
	}
	chk.Secondary = contract.HoldersCount{Method: second.Method, Holders: second.Holders, Slot: second.Slot}
	chk.Difference = absDiff(primary.Holders, second.Holders)
	if primary.Slot == 0 || second.Slot == 0 {
		chk.Verdict = contract.HoldersNotChecked
		chk.Reason = "a count without a slot: the churn the two counts may show is unknown; the primary's count is published unconfirmed"
		return chk
	}
	chk.SlotDistance = absDiff(primary.Slot, second.Slot)
	chk.AllowedChurn = AllowedChurn(chk.SlotDistance, floor, per1000)
	what := fmt.Sprintf("the primary (%s) counts %d holders at slot %d, the second source (%s) %d at slot %d: %d apart",
		primary.Method, primary.Holders, primary.Slot, second.Method, second.Holders, second.Slot, chk.Difference)
	if chk.Difference <= chk.AllowedChurn {
		chk.Verdict = contract.HoldersAgreed
		chk.Reason = fmt.Sprintf("%s, within the %d the %d slots between them allow", what, chk.AllowedChurn, chk.SlotDistance)
		return chk
	}
	chk.Verdict = contract.HoldersDisagree
	chk.Reason = fmt.Sprintf("%s, beyond the %d the %d slots between them allow; the primary's count is published, not confirmed",
		what, chk.AllowedChurn, chk.SlotDistance)
	return chk
}
