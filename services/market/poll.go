package market

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// published is the last document the collector wrote, with its envelope:
// what a held price keeps (its figures, updated_at and source).
type published struct {
	doc contract.Market
	env contract.Envelope
}

// Poll reads both aggregators at once and builds the market document,
// without writing it. DexScreener is the primary: its figures are
// published, cross-checked against GeckoTerminal's price of the same pool
// (crosscheck.go). When DexScreener fails, GeckoTerminal's figures are
// published alone (the fallback); when GeckoTerminal fails, DexScreener's
// are, marked single-source. Only when both fail does the poll fail (and
// is retried). A price the cross-check holds back leaves the last
// document as it was, with the new cross-check.
func (c *Collector) Poll(ctx context.Context) (collector.Result, error) {
	prev := c.previous(ctx)
	in := buildInput{Mint: c.mint, Official: c.official, MoveShare: c.moveShare}
	if prev != nil {
		in.Prev = &prev.doc
	}

	var ds contract.Market
	var gtPairs []wirePair
	var dsErr, gtErr error
	readGT := !c.cfg.DisableFallback
	var wg sync.WaitGroup
	wg.Go(func() { ds, dsErr = c.fromDexScreener(ctx, in) })
	if readGT {
		wg.Go(func() { gtPairs, gtErr = c.readGeckoTerminal(ctx, true) })
	}
	wg.Wait()
	if ctx.Err() != nil && (dsErr != nil || gtErr != nil) {
		return collector.Result{}, ctx.Err()
	}

	primary := source{name: contract.UpstreamDexScreener}
	secondary := source{name: contract.UpstreamGeckoTerminal, notRead: !readGT}
	var note string
	switch {
	case dsErr == nil:
		primary.doc = &ds
		if readGT {
			secondary.err = gtErr
			if gtErr == nil {
				gt, err := buildMarket(gtPairs, in)
				if err != nil {
					secondary.err = invalid(contract.UpstreamGeckoTerminal, "document rejected: %v", err)
				} else {
					secondary.doc = &gt
				}
			}
		}
	case !readGT:
		return collector.Result{}, collector.Classify(dsErr)
	default:
		pe := collector.Classify(dsErr)
		if errors.Is(gtErr, errGTBudget) { // the fallback waits for its budget
			gtPairs, gtErr = c.readGeckoTerminal(ctx, false)
		}
		var gt contract.Market
		if gtErr == nil {
			fin := in
			fin.Fallback = contract.UpstreamDexScreener
			gt, gtErr = geckoTerminalDocument(gtPairs, fin)
		}
		if gtErr != nil {
			return collector.Result{}, bothFailed(pe, collector.Classify(gtErr))
		}
		c.log.Info("fallback source used", "primary_error_kind", pe.Kind, "primary_error", pe.Message)
		note = fmt.Sprintf("fallback source used: %s failed (%s: %s)", contract.UpstreamDexScreener, pe.Kind, pe.Message)
		primary = source{name: contract.UpstreamGeckoTerminal, doc: &gt}
		secondary = source{name: contract.UpstreamDexScreener, err: dsErr}
	}

	now := time.Now()
	chk, hold := c.judge(primary, secondary, prev, now)
	c.observeCheck(chk)
	note = joinNote(note, chk)
	if hold {
		doc := prev.doc
		doc.CrossCheck = &chk
		doc.Warnings = withDisagreement(doc.Warnings, chk)
		return collector.Result{Doc: doc, Source: prev.env.Source, UpdatedAt: prev.env.UpdatedAt,
			Upstream: primary.name, Note: note}, nil
	}
	doc := *primary.doc
	doc.CrossCheck = &chk
	doc.Warnings = withDisagreement(doc.Warnings, chk)
	c.observeDoc(doc)
	c.backfill(ctx, doc)
	res := collector.Result{Doc: doc, Source: contract.Source{Name: contract.UpstreamDexScreener, Method: MethodTokenPairs},
		UpdatedAt: now, Samples: c.samples(ctx, doc), Note: note}
	if primary.name == contract.UpstreamGeckoTerminal {
		res.Source = contract.Source{Name: contract.UpstreamGeckoTerminal, Method: MethodTokenPools}
		res.Upstream = contract.UpstreamGeckoTerminal
	}
	return res, nil
}

// bothFailed is the poll's error when neither aggregator answered.
func bothFailed(primary, fb *collector.Error) *collector.Error {
	both := *primary
	both.Message = fmt.Sprintf("%s; fallback %s", primary.Message, fb.Message)
	// A retry may call whichever of the two has no wait left to run:
	// the shorter wait (none when either asked none).
	both.RetryAfter = min(primary.RetryAfter, fb.RetryAfter)
	if both.Remedy == "" {
		both.Remedy = fb.Remedy
	}
	return &both
}

// joinNote adds what the cross-check says to the run's note when the
// price is not simply agreed.
func joinNote(note string, chk contract.PriceCheck) string {
	if chk.Verdict == contract.PriceAgreed || chk.Reason == "" {
		return note
	}
	if note == "" {
		return "price " + chk.Verdict + ": " + chk.Reason
	}
	return note + "; price " + chk.Verdict + ": " + chk.Reason
}

// withDisagreement returns warnings with the price_sources_disagree
// warning of chk, when the aggregators disagree (disagree, held, or
// unconfirmed beyond the tolerance: contract.PriceSourcesDisagree), in
// place of any earlier one (a held document keeps its other warnings).
func withDisagreement(warnings []contract.Warning, chk contract.PriceCheck) []contract.Warning {
	out := slices.DeleteFunc(slices.Clone(warnings), func(w contract.Warning) bool {
		return w.Code == contract.WarnPriceSourcesDisagree
	})
	if contract.PriceSourcesDisagree(&chk) {
		out = append(out, contract.Warning{Code: contract.WarnPriceSourcesDisagree, Message: chk.Reason})
	}
	if out == nil {
		out = []contract.Warning{}
	}
	return out
}

// previous is the last document in the store with a price, for the price
// move warning and the cross-check; nil when there is none or it cannot
// be read.
func (c *Collector) previous(ctx context.Context) *published {
	doc, err := c.store.Read(ctx, contract.DomainMarket)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.log.Debug("previous market document not read", "error", err.Error())
		}
		return nil
	}
	var m contract.Market
	if err := doc.Decode(&m); err != nil || m.Status != contract.MarketOK {
		return nil
	}
	return &published{doc: m, env: doc.Envelope}
}
