package supply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
)

// nodeDoc is what one node's answer holds beside its figure: what the
// supply document is built from.
type nodeDoc struct {
	sup     tokenSupply
	ownerID string
	program string
	mint    mintState
}

// readNode reads the supply and the mint account from one node, at slot
// min or after, and validates them as one answer.
func (c *Collector) readNode(ctx context.Context, l *ledger, min uint64) nodeAnswer {
	a := nodeAnswer{node: l.node}
	var be *behindError
	doc, err := c.readSupply(ctx, l, min)
	switch {
	case errors.As(err, &be):
		a.behind, a.slot = true, be.slot
	case err != nil:
		a.err = err
	default:
		a.doc, a.slot = doc, doc.sup.Slot
		a.fig = figure{amount: doc.sup.Amount, decimals: doc.mint.Decimals, program: doc.program,
			mintAuthority: deref(doc.mint.MintAuthority), freezeAuthority: deref(doc.mint.FreezeAuthority)}
	}
	return a
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readSupply reads getTokenSupply and the mint account of one node.
func (c *Collector) readSupply(ctx context.Context, l *ledger, min uint64) (*nodeDoc, error) {
	sup, err := l.getTokenSupply(ctx, c.mint, min)
	if err != nil {
		return nil, err
	}
	total, err := amount.ParseU64(sup.Amount)
	if err != nil {
		return nil, invalidf("getTokenSupply amount %.40q is not a u64 base-10 integer", sup.Amount)
	}
	sup.Amount = total
	if sup.Slot == 0 {
		return nil, invalidf("getTokenSupply answered without a context slot")
	}
	acc, found, err := l.getAccount(ctx, c.mint, min)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, invalidf("the mint account %s does not exist, yet getTokenSupply answered", c.mint)
	}
	program, err := c.programName(acc.Owner, true)
	if err != nil {
		return nil, err
	}
	m, err := decodeMint(acc.Data, program == contract.ProgramToken2022)
	if err != nil {
		return nil, invalidf("mint account %s: %v", c.mint, err)
	}
	if m.Decimals != sup.Decimals {
		return nil, invalidf("getTokenSupply reports %d decimals, the mint account %d", sup.Decimals, m.Decimals)
	}
	if m.Decimals > contract.MaxDecimals {
		// What the ledger says, not a configuration mistake: nothing to
		// retry, and no amount this service would publish.
		return nil, &collector.Error{Kind: contract.ErrKindInvalid,
			Message: fmt.Sprintf("the mint reports %d decimals; this service supports 0 to %d", m.Decimals, contract.MaxDecimals),
			Remedy:  collector.RemedyMint(rpcVariable)}
	}
	if acc.Slot == sup.Slot && strconv.FormatUint(m.Supply, 10) != total {
		return nil, invalidf("at slot %d getTokenSupply reports %s, the mint account %d", sup.Slot, total, m.Supply)
	}
	return &nodeDoc{sup: sup, ownerID: acc.Owner, program: program, mint: m}, nil
}

// lastPublished returns the slot and the figure of domain d's last
// published document (0 and nil when there is none): no answer from an
// older slot is taken.
func (c *Collector) lastPublished(d contract.Domain) (uint64, *figure) {
	env, ok := c.runner.Last(d)
	if !ok {
		return 0, nil
	}
	if d != contract.DomainSupply {
		return env.Source.Slot, nil
	}
	var s contract.Supply
	if err := json.Unmarshal(env.Data, &s); err != nil {
		return env.Source.Slot, nil
	}
	return env.Source.Slot, &figure{amount: s.TotalRaw, decimals: s.Decimals, program: s.TokenProgram,
		mintAuthority: deref(s.MintAuthority), freezeAuthority: deref(s.FreezeAuthority)}
}

// readAll reads every node at once, each bounded by SUPPLY_RPC_TIMEOUT
// per call, and counts the answers discarded as behind.
func (c *Collector) readAll(ctx context.Context, min uint64) []nodeAnswer {
	answers := make([]nodeAnswer, len(c.nodes))
	var wg sync.WaitGroup
	for i, l := range c.nodes {
		wg.Go(func() { answers[i] = c.readNode(ctx, l, min) })
	}
	wg.Wait()
	for _, a := range answers {
		if a.behind {
			c.metrics.ObserveBehind(contract.CollectorSupply, contract.DomainSupply, a.node)
		}
	}
	return answers
}

// crossCheck reads every node and compares their answers.
func (c *Collector) crossCheck(ctx context.Context) (crossCheck, uint64, error) {
	min, published := c.lastPublished(contract.DomainSupply)
	answers := c.readAll(ctx, min)
	if ctx.Err() != nil {
		return crossCheck{}, 0, ctx.Err()
	}
	now := time.Now()
	c.mu.Lock()
	prev := c.ahead
	c.mu.Unlock()
	x := compare(answers, compareInput{quorum: c.quorum, minSlot: min, published: published, maxLag: c.cfg.NodeMaxLag,
		prevAhead: prev, persist: c.persist, now: now})
	c.mu.Lock()
	c.ahead = x.ahead
	changed := x.cc.State != c.lastState
	c.lastState = x.cc.State
	c.mu.Unlock()
	c.metrics.ObserveCrossCheck(&x.cc)
	if changed && x.cc.State != contract.CrossCheckAgreed {
		c.log.Warn("ledger nodes do not all agree", "state", x.cc.State, "agreed", x.cc.Agreed,
			"nodes", x.cc.Nodes, "quorum", x.cc.Quorum, "issues", x.cc.Issues)
	} else if changed {
		c.log.Info("ledger nodes agree", "nodes", x.cc.Nodes, "slot", x.cc.Slot)
	}
	if x.agreed == nil {
		return x, min, c.noQuorum(answers, x)
	}
	return x, min, nil
}

// noQuorum is the error of a poll in which no figure reached the quorum.
// A single node's failure is reported as itself (its kind and remedy);
// so is the first one when every node failed.
func (c *Collector) noQuorum(answers []nodeAnswer, x crossCheck) error {
	cc := x.cc
	down := 0
	for _, a := range answers {
		if a.err != nil {
			down++
		}
	}
	if down == len(answers) {
		ce := *collector.Classify(answers[0].err)
		if ce.Kind == contract.ErrKindInternal && answers[0].err != nil && errors.Is(answers[0].err, context.Canceled) {
			return answers[0].err
		}
		if len(answers) > 1 {
			ce.Message = fmt.Sprintf("all %d ledger nodes failed; node 1: %s", len(answers), ce.Message)
		}
		ce.Ledger = &cc
		return &ce
	}
	return &collector.Error{Kind: contract.ErrKindNoQuorum, Message: x.summary(), Retry: true, Ledger: &cc,
		Remedy: "wait for the lagging nodes; a node that keeps disagreeing or failing should be replaced in SOLANA_RPC_URLS"}
}
