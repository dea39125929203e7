package supply

import (
	"context"
	"errors"
	"fmt"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/check"
	"github.com/tokendata/tokendata/shared/collector"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// Endpoint groups the supply collector decides.
const (
	ServesSupply   = "/api/total-supply, /api/circulating-supply, /api/max-supply, /api/supply, /api/coingecko-supply"
	ServesMetadata = "/api/token-metadata, its on-chain part"
)

// Probe builds the collector as serving does (its SUPPLY_ variables, the
// common configuration, the token) and checks it (Check), into the supply
// and metadata groups of r.
func Probe(ctx context.Context, common config.Common, token config.Token, r *check.Report) {
	sup, meta := r.Group("supply", ServesSupply), r.Group("metadata", ServesMetadata)
	cfg, err := LoadConfig()
	if err != nil {
		sup.Fail("SUPPLY_ variables", err.Error(), "fix the variable the error names (docs/environment.md)")
		return
	}
	col, err := New(common, token, cfg, collector.CheckDeps(token.Mint))
	if err != nil {
		sup.Fail("configuration", err.Error(), "fix the variable or the token file's key the error names")
		return
	}
	defer col.Close()
	col.Check(ctx, sup, meta)
}

// Check reads the ledger once as the two polls read it (getTokenSupply
// and the mint account; the mint's Token-2022 metadata or its Metaplex
// account), with the very code of the polls, and adds the verdicts to
// the supply and metadata groups: what the ledger says against the token
// file, and for a failure the remedy of the shared classification. It
// writes nothing.
func (c *Collector) Check(ctx context.Context, sup, meta *check.Group) {
	res, err := c.pollSupply(ctx)
	if err != nil {
		collector.CheckFail(sup, "getTokenSupply and the mint account", err)
		if ce := (*collector.Error)(nil); errors.As(err, &ce) {
			checkNodes(sup, ce.Ledger)
		}
	} else {
		c.checkSupply(sup, res.Doc.(contract.Supply))
		checkNodes(sup, res.Ledger)
	}
	res, err = c.pollMetadata(ctx)
	if err != nil {
		collector.CheckFail(meta, "on-chain metadata", err)
		return
	}
	c.checkMetadata(meta, res.Doc.(contract.Metadata))
}

// checkNodes reports, with several ledger nodes, which of them agree.
func checkNodes(g *check.Group, cc *contract.LedgerCrossCheck) {
	if cc == nil || cc.Nodes < 2 {
		return
	}
	for _, n := range cc.PerNode {
		subject := fmt.Sprintf("ledger node %d", n.Node)
		switch n.Verdict {
		case contract.NodeAgreed:
			g.OK(subject, "agrees: %s base units at slot %d", n.AmountRaw, n.Slot)
		case contract.NodeAhead:
			g.Warn(subject, fmt.Sprintf("answers %s base units at slot %d, after every node that confirms the agreed supply: a change no quorum confirms yet", n.AmountRaw, n.Slot),
				"check again in a minute: the other nodes confirm a real mint or burn as they reach its slot")
		case contract.NodeLagging:
			g.Warn(subject, fmt.Sprintf("lags %d slots behind the others", n.SlotsBehind),
				"a node that stays behind should be replaced in SOLANA_RPC_URLS")
		case contract.NodeDisagreeing:
			g.Fail(subject, fmt.Sprintf("disagrees: %s base units at slot %d", n.AmountRaw, n.Slot),
				"replace the node in SOLANA_RPC_URLS: it answers a supply the other nodes do not confirm")
		default:
			g.Fail(subject, fmt.Sprintf("down (%s)", n.Error), "check the node's URL and key in SOLANA_RPC_URLS")
		}
	}
	if cc.State == contract.CrossCheckNoQuorum {
		g.Fail("cross-check", fmt.Sprintf("no supply is confirmed by %d of the %d ledger nodes", cc.Quorum, cc.Nodes),
			"fix or replace the nodes above, or lower SUPPLY_QUORUM")
		return
	}
	g.OK("cross-check", "%d of %d ledger nodes agree at slot %d (quorum %d)", cc.Agreed, cc.Nodes, cc.Slot, cc.Quorum)
}

func (c *Collector) checkSupply(g *check.Group, doc contract.Supply) {
	total, err := amount.Format(doc.TotalRaw, doc.Decimals)
	if err != nil {
		total = doc.TotalRaw
	}
	g.OK("getTokenSupply", "total supply %s (%s base units, %d decimals) at slot %d, %s commitment",
		total, doc.TotalRaw, doc.Decimals, doc.Slot, doc.Commitment)
	g.OK("mint account", "owned by the %s program (%s), %d decimals", doc.TokenProgram, doc.TokenProgramID, doc.Decimals)
	switch {
	case c.token.Decimals == nil:
		g.OK("decimals", "the token file states none: the ledger's %d are used", doc.Decimals)
	case *c.token.Decimals != doc.Decimals:
		g.Fail("decimals", fmt.Sprintf("the token file states %d decimals, the ledger %d", *c.token.Decimals, doc.Decimals),
			fmt.Sprintf("write decimals: %d in the token file (or remove the key): the mismatch is published as the warning %s", doc.Decimals, WarnDecimalsMismatch))
	default:
		g.OK("decimals", "the token file's %d match the ledger", doc.Decimals)
	}
	if doc.MaxRaw == "" {
		g.OK("max_supply", "none disclosed (max_supply: none): /api/max-supply answers 404 not_disclosed and no FDV is published")
	} else {
		maxText := amount.MustFormat(c.maxWhole, 0)
		if amount.Compare(doc.TotalRaw, doc.MaxRaw) > 0 {
			g.Fail("max_supply", fmt.Sprintf("the on-chain total %s is above the token file's max_supply %s", total, maxText),
				"correct max_supply in the token file (whole tokens): the total above it is published as the warning "+
					WarnTotalAboveMax+" and /api/status turns degraded")
		} else {
			g.OK("max_supply", "%s, at or above the on-chain total", maxText)
		}
	}
	if doc.MintAuthority != nil {
		g.Warn("mint authority", fmt.Sprintf("%s is set: the supply can still grow, and /api/supply says so (%s)", *doc.MintAuthority, WarnMintAuthorityActive),
			"nothing to change here; the ledger enforces max_supply only once the mint authority is disabled")
	} else {
		g.OK("mint authority", "none: no token can be minted any more")
	}
	if doc.FreezeAuthority != nil {
		g.Warn("freeze authority", fmt.Sprintf("%s is set: it can freeze any holder's account, and /api/supply says so (%s)", *doc.FreezeAuthority, WarnFreezeAuthorityActive),
			"nothing to change here; aggregators and reviewers see it")
	} else {
		g.OK("freeze authority", "none")
	}
	for _, w := range doc.Warnings {
		switch w.Code {
		case WarnMintAuthorityActive, WarnFreezeAuthorityActive, WarnDecimalsMismatch, WarnTotalAboveMax:
			continue // said above
		}
		g.Warn("warning "+w.Code, w.Message, "disclosed on /api/supply; nothing to change here")
	}
}

func (c *Collector) checkMetadata(g *check.Group, doc contract.Metadata) {
	on := doc.OnChain
	if on == nil {
		g.Warn("on-chain metadata", "the ledger holds none (no Token-2022 metadata extension, no Metaplex account): wallets cannot show the token's name",
			"create the token's metadata on chain (Metaplex Token Metadata, or the Token-2022 extension); the API serves the token file's identity meanwhile")
		return
	}
	where := map[string]string{contract.MetadataSourceToken2022: "the mint's Token-2022 metadata extension",
		contract.MetadataSourceMetaplex: "the Metaplex metadata account " + on.Address}[on.Source]
	g.OK("on-chain metadata", "%s: name %q, symbol %q", where, on.Name, on.Symbol)
	mismatch := false
	for _, w := range doc.Warnings {
		switch w.Code {
		case WarnNameMismatch:
			mismatch = true
			g.Fail("name", w.Message, fmt.Sprintf("write name: %q in the token file, or update the on-chain metadata; "+
				"/api/token-metadata publishes the difference as the warning %s", on.Name, w.Code))
		case WarnSymbolMismatch:
			mismatch = true
			g.Fail("symbol", w.Message, fmt.Sprintf("write symbol: %q in the token file, or update the on-chain metadata; "+
				"/api/token-metadata publishes the difference as the warning %s", on.Symbol, w.Code))
		default:
			g.Warn("warning "+w.Code, w.Message, "disclosed on /api/token-metadata")
		}
	}
	if !mismatch {
		if c.token.Name == "" && c.token.Symbol == "" {
			g.OK("name and symbol", "the token file states none: the on-chain ones are served")
		} else {
			g.OK("name and symbol", "the token file's match the ledger")
		}
	}
}
