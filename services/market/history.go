package market

import (
	"context"
	"errors"

	"github.com/shopspring/decimal"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
	"github.com/tokendata/tokendata/shared/store"
)

// maxSupplyWhole is the token file's maximum supply in whole tokens, nil
// when the issuer discloses none: the FDV's factor, as the edge takes it.
func maxSupplyWhole(token config.Token) *decimal.Decimal {
	raw, err := token.MaxSupplyRaw(0)
	if err != nil {
		return nil
	}
	d, err := decimal.NewFromString(raw)
	if err != nil {
		return nil
	}
	return &d
}

// samples are the history samples of a market document written by a
// successful poll (contract.MarketSamples): the market cap is the price
// times the circulating supply of the supply document the store holds
// now, as the edge computes it when it renders this document; without a
// supply document there is no market cap sample (a gap, not a guess).
func (c *Collector) samples(ctx context.Context, m contract.Market) []contract.Sample {
	if m.Status != contract.MarketOK {
		return nil
	}
	var circulating *decimal.Decimal
	doc, err := c.store.Read(ctx, contract.DomainSupply)
	switch {
	case err == nil:
		var s contract.Supply
		if doc.Decode(&s) == nil {
			if whole, err := amount.Format(s.CirculatingRaw, s.Decimals); err == nil {
				if d, err := decimal.NewFromString(whole); err == nil {
					circulating = &d
				}
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		c.log.Debug("supply document not read for the market cap sample", "error", err.Error())
	}
	return contract.MarketSamples(m, circulating, c.maxSupply)
}
