package contract

// The ledger cross-check: the supply collector reads every configured
// ledger node on each poll and publishes a changed figure only once a
// quorum of them confirms it (docs/decisions.md, "Cross-checked supply").
// What each node answered is kept here, numbered 1..N in configuration
// order: never a URL, a host or a key.

// Node verdicts of a ledger cross-check.
const (
	// NodeAgreed: the node answers the published figure.
	NodeAgreed = "agreed"
	// NodeDisagreeing: the node answers another figure at a slot at or
	// after the quorum's, where the ledger cannot hold two figures.
	NodeDisagreeing = "disagreeing"
	// NodeLagging: the node answers from a slot before the quorum's (or
	// before the last published figure's: it is discarded, whatever it
	// says), or answers the agreed figure from more than the bound
	// (SUPPLY_NODE_MAX_LAG) before the slot a quorum of the nodes reached:
	// that answer still confirms the figure and counts in Agreed.
	NodeLagging = "lagging"
	// NodeAhead: the node answers another figure at a slot after every
	// node that confirms the published one: a change not yet confirmed by
	// a quorum. Tolerated for one poll; a node still ahead with the same
	// figure on the next poll, without a quorum, is disagreeing.
	NodeAhead = "ahead"
	// NodeDown: the node failed (unreachable, an HTTP or JSON-RPC error,
	// an answer that does not validate).
	NodeDown = "down"
)

// NodeVerdicts lists every verdict, in a stable order (metrics).
var NodeVerdicts = []string{NodeAgreed, NodeDisagreeing, NodeLagging, NodeAhead, NodeDown}

// Cross-check states.
const (
	// CrossCheckAgreed: a quorum confirms the figure and no node is
	// disagreeing, down or lagging past the bound.
	CrossCheckAgreed = "agreed"
	// CrossCheckDegraded: a quorum confirms the figure, and at least one
	// node disagrees, is down or lags past the bound.
	CrossCheckDegraded = "degraded"
	// CrossCheckNoQuorum: no figure has a quorum; nothing was published
	// and the last agreed figure stays.
	CrossCheckNoQuorum = "no_quorum"
)

// ErrKindNoQuorum is the error kind of a supply poll in which no figure
// reached the quorum of ledger nodes: the last agreed figure stays.
const ErrKindNoQuorum = "no_quorum"

// ErrKindBehind is the error kind of a poll whose ledger answers all came
// from a slot before the figure last published (JSON-RPC -32016, or an
// older context slot): discarded, never published; the figure stays.
const ErrKindBehind = "ledger_behind"

// LedgerCrossCheck is the outcome of one cross-checked read of the
// ledger nodes: in the supply document (the check that backs the
// published figure) and in the status record's supply run (the last
// poll's, published or not).
type LedgerCrossCheck struct {
	// State is CrossCheckAgreed, CrossCheckDegraded or CrossCheckNoQuorum.
	State string `json:"state"`
	// Nodes is the number of configured ledger nodes.
	Nodes int `json:"nodes"`
	// Quorum is how many nodes must confirm a figure (SUPPLY_QUORUM).
	Quorum int `json:"quorum"`
	// Agreed is how many nodes answer the figure (the published one, or
	// with no quorum the last published one) at or after the required
	// slot, a lagging node answering it included.
	Agreed int `json:"agreed"`
	// Slot is the quorum's slot: the highest slot at which Quorum nodes
	// confirm the figure (each of them at that slot or after); 0 without
	// a quorum.
	Slot uint64 `json:"slot"`
	// MinContextSlot is the slot every read required (the last published
	// figure's); 0 when nothing was published before.
	MinContextSlot uint64 `json:"min_context_slot"`
	// PerNode is each node's answer, in configuration order.
	PerNode []LedgerNode `json:"per_node"`
	// Issues name each node that degrades the check, and why, in plain
	// words (node numbers only): what /api/status shows.
	Issues []string `json:"issues"`
}

// LedgerNode is one node's answer in a cross-check.
type LedgerNode struct {
	// Node is the node's number, 1..N in configuration order.
	Node int `json:"node"`
	// Verdict is one of the Node* verdicts.
	Verdict string `json:"verdict"`
	// Slot is the slot of the node's answer; for a node behind the
	// required slot, the slot it reported (0 when unknown or down).
	Slot uint64 `json:"slot"`
	// AmountRaw is the total supply the node answered, in base units;
	// empty when it answered none (down, or discarded as behind).
	AmountRaw string `json:"amount_raw"`
	// Decimals is the mint's decimals as the node answered them.
	Decimals *uint8 `json:"decimals"`
	// SlotsBehind is how far the node's slot is below the quorum's (or
	// the required slot), for a lagging node.
	SlotsBehind uint64 `json:"slots_behind,omitempty"`
	// Error is the error kind of a down node (one of ErrKind*): never
	// the message, which could quote the node.
	Error string `json:"error,omitempty"`
}
