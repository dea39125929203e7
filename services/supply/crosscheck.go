package supply

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// The comparison of the ledger nodes' answers (docs/decisions.md,
// "Cross-checked supply"). Nodes read at different slots may rightly
// answer different figures: a mint or a burn lands on one node before
// another. So a figure is compared with the slots it was seen at:
//
//   - a figure that Quorum nodes answer is agreed, at the quorum's slot:
//     the highest slot that Quorum of them have reached;
//   - another figure at a slot before the quorum's is an older ledger:
//     the node is lagging;
//   - another figure at a slot after every node that confirms the agreed
//     one may be a newer change: the node is ahead, for one poll; on the
//     next it is disagreeing unless a quorum has reached the figure;
//   - another figure anywhere between is impossible on one ledger: the
//     node is disagreeing;
//   - the agreed figure from more than maxLag slots before the slot a
//     quorum of the nodes reached is lagging too, yet confirms the figure:
//     it was read at or after the last published slot.

// figure is what the nodes must agree on: the supply and what decides
// whether it can change.
type figure struct {
	amount          string
	decimals        uint8
	mintAuthority   string // "" when none
	freezeAuthority string
	program         string
}

func (f figure) String() string {
	return fmt.Sprintf("%s base units, %d decimals", f.amount, f.decimals)
}

// nodeAnswer is what one node answered in a poll: a figure at a slot, a
// slot before the last published one (behind), or a failure (err).
type nodeAnswer struct {
	node   int
	fig    figure
	slot   uint64
	behind bool
	err    error
	doc    *nodeDoc // what the document is built from, with fig
}

// answered reports whether the node gave a figure to compare.
func (a nodeAnswer) answered() bool { return !a.behind && a.err == nil }

// aheadSeen is a figure a node answers that no quorum confirms (the node
// ahead or disagreeing), and since when it has answered it.
type aheadSeen struct {
	fig   figure
	since time.Time
}

// crossCheck is the outcome of compare.
type crossCheck struct {
	cc contract.LedgerCrossCheck
	// agreed is the figure a quorum confirms, and winner the answer the
	// document is built from; nil without a quorum.
	agreed *figure
	winner *nodeAnswer
	// ahead are the nodes that answer a figure no quorum confirms in this
	// poll, ahead or disagreeing.
	ahead map[int]aheadSeen
}

// compareInput is what compare needs beside the answers.
type compareInput struct {
	quorum    int
	minSlot   uint64
	published *figure
	maxLag    uint64
	// prevAhead is the poll before's ahead: a node ahead with a figure it
	// has answered for persist or longer is disagreeing.
	prevAhead map[int]aheadSeen
	persist   time.Duration
	now       time.Time
}

// compare finds the figure a quorum confirms, and each node's verdict.
func compare(answers []nodeAnswer, in compareInput) crossCheck {
	out := crossCheck{ahead: map[int]aheadSeen{}}
	cc := contract.LedgerCrossCheck{Nodes: len(answers), Quorum: in.quorum, MinContextSlot: in.minSlot,
		PerNode: make([]contract.LedgerNode, len(answers)), Issues: []string{}}

	// Group the answers by figure, in the order first seen.
	figs, slots := groupByFigure(answers)
	var qslot uint64
	out.agreed, qslot = quorumFigure(figs, slots, in)

	judgeNodes(&cc, out.ahead, answers, in, out.agreed, qslot, slots)
	switch {
	case out.agreed == nil:
		cc.State = contract.CrossCheckNoQuorum
	case len(cc.Issues) > 0:
		cc.State = contract.CrossCheckDegraded
		cc.Slot = qslot
	default:
		cc.State = contract.CrossCheckAgreed
		cc.Slot = qslot
	}
	if out.agreed != nil {
		out.winner = latestWith(answers, *out.agreed)
	}
	out.cc = cc
	return out
}

// groupByFigure lists the figures answered, in the order first seen, and
// the slots each was answered at.
func groupByFigure(answers []nodeAnswer) (figs []figure, slots map[figure][]uint64) {
	slots = map[figure][]uint64{}
	for _, a := range answers {
		if !a.answered() {
			continue
		}
		if _, ok := slots[a.fig]; !ok {
			figs = append(figs, a.fig)
		}
		slots[a.fig] = append(slots[a.fig], a.slot)
	}
	return figs, slots
}

// quorumFigure is the figure a quorum confirms at the highest slot, and
// that slot; at a tie the last published figure wins, else neither does
// (nil).
func quorumFigure(figs []figure, slots map[figure][]uint64, in compareInput) (agreed *figure, qslot uint64) {
	tie := false
	for _, f := range figs {
		s := slices.Clone(slots[f])
		if len(s) < in.quorum {
			continue
		}
		slices.Sort(s)
		q := s[len(s)-in.quorum] // Quorum nodes are at this slot or after
		switch {
		case agreed == nil || q > qslot:
			f := f
			agreed, qslot, tie = &f, q, false
		case q == qslot && in.published != nil && f == *in.published:
			f := f
			agreed, tie = &f, false
		case q == qslot && (in.published == nil || *agreed != *in.published):
			tie = true // two figures with a quorum at one slot: neither wins
		}
	}
	if tie {
		agreed = nil
	}
	return agreed, qslot
}

// judgeNodes gives each node its verdict in cc (PerNode, Agreed and
// Issues) against the reference figure: the agreed one (nil without a
// quorum at qslot), else the last published one. The nodes that answer a
// figure no quorum confirms are recorded in ahead, each with since when
// it has answered that figure: the one poll a node is tolerated ahead is
// for a change the others have not reached yet, so a node that answered
// the figure before (ahead or disagreeing) is not tolerated again because
// it is read at a later slot than the others.
func judgeNodes(cc *contract.LedgerCrossCheck, ahead map[int]aheadSeen, answers []nodeAnswer, in compareInput,
	agreed *figure, qslot uint64, slots map[figure][]uint64) {
	// The reference figure: the agreed one, else the last published one.
	ref := agreed
	if ref == nil {
		ref = in.published
	}
	var lo, hi uint64 // slots of the reference's supporters
	if ref != nil && len(slots[*ref]) > 0 {
		s := slots[*ref]
		lo, hi = slices.Min(s), slices.Max(s)
		if agreed != nil {
			lo = qslot
		}
	}
	tip := ledgerTip(answers, in.quorum)
	unconfirmed := func(a nodeAnswer) (aheadSeen, bool) {
		if prev, ok := in.prevAhead[a.node]; ok && prev.fig == a.fig {
			return prev, true
		}
		return aheadSeen{fig: a.fig, since: in.now}, false
	}
	for i, a := range answers {
		n := contract.LedgerNode{Node: a.node, Slot: a.slot}
		if a.answered() {
			n.AmountRaw = a.fig.amount
			d := a.fig.decimals
			n.Decimals = &d
		}
		switch {
		case a.err != nil:
			n.Verdict, n.Slot = contract.NodeDown, 0
			n.Error = errKind(a.err)
			cc.Issues = append(cc.Issues, fmt.Sprintf("node %d is down (%s)", a.node, n.Error))
		case a.behind:
			n.Verdict = contract.NodeLagging
			ref := max(in.minSlot, qslot)
			if a.slot == 0 || a.slot < ref {
				n.SlotsBehind = ref - a.slot
			}
			if a.slot == 0 || n.SlotsBehind > in.maxLag {
				cc.Issues = append(cc.Issues, fmt.Sprintf("node %d lags: it has not reached slot %d, the last published one", a.node, in.minSlot))
			}
		case ref != nil && a.fig == *ref && tip > a.slot+in.maxLag:
			// The figure, from far behind the others: the node confirms
			// it (its slot is at or after the last published one), yet
			// it lags, whatever it answers.
			n.Verdict, n.SlotsBehind = contract.NodeLagging, tip-a.slot
			cc.Agreed++
			cc.Issues = append(cc.Issues, fmt.Sprintf("node %d lags %d slots behind: it answers %s at slot %d, where %d nodes have reached slot %d",
				a.node, n.SlotsBehind, a.fig, a.slot, in.quorum, tip))
		case ref != nil && a.fig == *ref:
			n.Verdict = contract.NodeAgreed
			cc.Agreed++
		case ref != nil && len(slots[*ref]) > 0 && a.slot < lo:
			n.Verdict, n.SlotsBehind = contract.NodeLagging, lo-a.slot
			if n.SlotsBehind > in.maxLag {
				cc.Issues = append(cc.Issues, fmt.Sprintf("node %d lags %d slots behind: it answers %s at slot %d", a.node, n.SlotsBehind, a.fig, a.slot))
			}
		case (ref == nil || len(slots[*ref]) == 0) && contradicted(answers, a):
			n.Verdict = contract.NodeDisagreeing
			ahead[a.node], _ = unconfirmed(a)
			cc.Issues = append(cc.Issues, fmt.Sprintf("node %d disagrees: another node answers another figure at slot %d", a.node, a.slot))
		case ref == nil || len(slots[*ref]) == 0 || a.slot > hi:
			prev, seen := unconfirmed(a)
			ahead[a.node] = prev
			if seen && in.now.Sub(prev.since) >= in.persist {
				n.Verdict = contract.NodeDisagreeing
				cc.Issues = append(cc.Issues, fmt.Sprintf("node %d disagrees: it has answered %s since slot %d and no quorum confirms it", a.node, a.fig, a.slot))
				break
			}
			n.Verdict = contract.NodeAhead
		default:
			n.Verdict = contract.NodeDisagreeing
			ahead[a.node], _ = unconfirmed(a)
			cc.Issues = append(cc.Issues, fmt.Sprintf("node %d disagrees: it answers %s at slot %d, where %d nodes confirm %s by slot %d",
				a.node, a.fig, a.slot, len(slots[*ref]), *ref, hi))
		}
		cc.PerNode[i] = n
	}
}

// latestWith is the answer of fig at the highest slot (the first of
// them at a tie).
func latestWith(answers []nodeAnswer, fig figure) *nodeAnswer {
	var winner *nodeAnswer
	for i := range answers {
		a := &answers[i]
		if a.answered() && a.fig == fig && (winner == nil || a.slot > winner.slot) {
			winner = a
		}
	}
	return winner
}

// ledgerTip is the slot that quorum of the answering nodes have reached,
// whatever figure they answer (0 when fewer answered): a node answering
// the agreed figure more than SUPPLY_NODE_MAX_LAG slots before it is
// lagging. Taking the quorum's and not the highest slot keeps one node
// that reports a far slot from turning every other one into a laggard.
func ledgerTip(answers []nodeAnswer, quorum int) uint64 {
	var s []uint64
	for _, a := range answers {
		if a.answered() {
			s = append(s, a.slot)
		}
	}
	if quorum < 1 || len(s) < quorum {
		return 0
	}
	slices.Sort(s)
	return s[len(s)-quorum]
}

// contradicted reports whether another node answers another figure at
// a's very slot: one ledger holds one figure at a slot.
func contradicted(answers []nodeAnswer, a nodeAnswer) bool {
	for _, b := range answers {
		if b.node != a.node && b.answered() && b.slot == a.slot && b.fig != a.fig {
			return true
		}
	}
	return false
}

// summary says, for a poll without a quorum, what each node answered.
func (x crossCheck) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no figure is confirmed by %d of the %d ledger nodes; the last agreed supply stays:", x.cc.Quorum, x.cc.Nodes)
	for _, n := range x.cc.PerNode {
		fmt.Fprintf(&b, " node %d %s", n.Node, n.Verdict)
		switch {
		case n.AmountRaw != "":
			fmt.Fprintf(&b, " (%s at slot %d)", n.AmountRaw, n.Slot)
		case n.Error != "":
			fmt.Fprintf(&b, " (%s)", n.Error)
		case n.Verdict == contract.NodeLagging:
			fmt.Fprintf(&b, " (before slot %d)", x.cc.MinContextSlot)
		}
		b.WriteString(";")
	}
	return strings.TrimSuffix(b.String(), ";")
}

// errKind is the error kind of a failed node (never its message).
func errKind(err error) string { return collector.Classify(err).Kind }
