// Package snapshot is the edge's copy of the store, as one rendering
// reads it: the documents (decoded, validated, with their expiry), the
// refusals, the collectors' status records and the history series. The
// mirror builds each State from what it read (Merge, Expire) and the
// view renders it; a State is never modified after it is built. It
// imports neither the view nor the store nor net/http.
package snapshot

import (
	"errors"
	"fmt"
	"time"

	"github.com/tokendata/tokendata/shared/amount"
	"github.com/tokendata/tokendata/shared/contract"
)

// Doc is one domain's document as the edge holds it: the envelope, its
// decoded and validated document, and when it expires.
type Doc struct {
	Env contract.Envelope
	// Value is *contract.Supply, *contract.Metadata, *contract.Market or
	// *contract.Holders.
	Value any
	// Expires is when the key's TTL runs out (zero: never).
	Expires time.Time
}

// State is the immutable input of one rendering: the documents, the
// collectors' status records, and what went wrong reading them.
type State struct {
	Docs map[contract.Domain]*Doc
	// Rejected names domains whose stored value was refused (unknown
	// schema_version, undecodable, invalid amounts), with why. The previous
	// good document, if any, is still in Docs.
	Rejected map[contract.Domain]string
	Statuses map[string]contract.Status
	// Hist is the history by measure and window (see State.History); it
	// is read apart from the documents (the mirror's readHistory) and
	// carried from state to state.
	Hist map[HistKey]*HistorySeries
}

// Supply is the supply document, nil when the state has none.
func (st *State) Supply() *contract.Supply {
	if d := st.Docs[contract.DomainSupply]; d != nil {
		return d.Value.(*contract.Supply)
	}
	return nil
}

// Metadata is the metadata document, nil when the state has none.
func (st *State) Metadata() *contract.Metadata {
	if d := st.Docs[contract.DomainMetadata]; d != nil {
		return d.Value.(*contract.Metadata)
	}
	return nil
}

// Market is the market document, nil when the state has none.
func (st *State) Market() *contract.Market {
	if d := st.Docs[contract.DomainMarket]; d != nil {
		return d.Value.(*contract.Market)
	}
	return nil
}

// Holders is the holders document, nil when the state has none.
func (st *State) Holders() *contract.Holders {
	if d := st.Docs[contract.DomainHolders]; d != nil {
		return d.Value.(*contract.Holders)
	}
	return nil
}

// decodeAt is decode, after refusing an envelope dated too far ahead of
// now.
func decodeAt(env contract.Envelope, now time.Time) (any, error) {
	if err := env.ValidateAt(now); err != nil {
		return nil, fmt.Errorf("%s: %w", env.Domain, err)
	}
	return Decode(env)
}

// Decode turns an envelope into its validated document. It is the one
// place where bytes written by another process are interpreted, so it
// refuses anything the renderers could not turn into an exact body.
func Decode(env contract.Envelope) (any, error) {
	switch env.Domain {
	case contract.DomainSupply:
		var s contract.Supply
		if err := env.Decode(&s); err != nil {
			return nil, err
		}
		return &s, validateSupply(&s)
	case contract.DomainMetadata:
		var m contract.Metadata
		if err := env.Decode(&m); err != nil {
			return nil, err
		}
		return &m, nil
	case contract.DomainMarket:
		var m contract.Market
		if err := env.Decode(&m); err != nil {
			return nil, err
		}
		return &m, validateMarket(&m)
	case contract.DomainHolders:
		var h contract.Holders
		if err := env.Decode(&h); err != nil {
			return nil, err
		}
		return &h, nil
	}
	return nil, fmt.Errorf("unknown domain %q", env.Domain)
}

func validateSupply(s *contract.Supply) error {
	if s.Decimals > 18 {
		return fmt.Errorf("supply: decimals %d is more than 18", s.Decimals)
	}
	if _, err := amount.ParseU64(s.TotalRaw); err != nil {
		return fmt.Errorf("supply: total_raw: %w", err)
	}
	if _, err := amount.ParseU64(s.CirculatingRaw); err != nil {
		return fmt.Errorf("supply: circulating_raw: %w", err)
	}
	if amount.Compare(s.CirculatingRaw, s.TotalRaw) != 0 {
		// Disclosure rule 1: every minted token circulates.
		return fmt.Errorf("supply: circulating_raw %s differs from total_raw %s", s.CirculatingRaw, s.TotalRaw)
	}
	if s.MaxRaw != "" {
		if _, err := amount.Format(s.MaxRaw, s.Decimals); err != nil {
			return fmt.Errorf("supply: max_raw: %w", err)
		}
	}
	return nil
}

func validateMarket(m *contract.Market) error {
	switch m.Status {
	case contract.MarketOK:
		if m.PriceUSD == nil || !m.PriceUSD.IsPositive() {
			return errors.New("market: status ok without a positive price_usd")
		}
		if m.Selected == nil {
			return errors.New("market: status ok without a selected pair")
		}
	case contract.MarketNotIndexed, contract.MarketNoUsablePair:
	default:
		return fmt.Errorf("market: unknown status %q", m.Status)
	}
	return nil
}

// Merge builds the next state from the previous one and a successful read
// of the store. The store is the source of truth: a valid document it
// returns replaces ours, even when ours is dated later, so that one bad
// write (a wrong clock, a hand-written key) never outlives the next good
// one. A document dated more than contract.MaxClockSkew ahead of now is not
// valid. A domain the store no longer has (expired, or lost by a Redis
// restart without persistence) keeps our copy until its own TTL runs out; a
// value that cannot be used never replaces a good one. Documents past
// their TTL are dropped.
func Merge(prev *State, read map[contract.Domain]ReadDoc, readErrs map[contract.Domain]error, statuses map[string]contract.Status, now time.Time) (*State, []string) {
	next := &State{Docs: map[contract.Domain]*Doc{}, Rejected: map[contract.Domain]string{}, Statuses: statuses}
	if statuses == nil && prev != nil {
		next.Statuses = prev.Statuses
	}
	if prev != nil {
		next.Hist = prev.Hist
	}
	var problems []string
	for _, d := range contract.Domains {
		var old *Doc
		if prev != nil {
			old = prev.Docs[d]
		}
		cur := old
		if r, ok := read[d]; ok {
			switch {
			case old != nil && old.Env.UpdatedAt.Equal(r.Env.UpdatedAt) && string(old.Env.Data) == string(r.Env.Data):
				// unchanged; the expiry computed from the remaining TTL
				// jitters by the read latency, so keep ours unless it moved
				if diff := r.Expires.Sub(old.Expires); diff > time.Second || diff < -time.Second {
					cur = &Doc{Env: old.Env, Value: old.Value, Expires: r.Expires}
				}
			default:
				v, err := decodeAt(r.Env, now)
				if err != nil {
					next.Rejected[d] = err.Error()
					problems = append(problems, err.Error())
					break
				}
				cur = &Doc{Env: r.Env, Value: v, Expires: r.Expires}
			}
		}
		if e := readErrs[d]; e != nil {
			next.Rejected[d] = e.Error()
			problems = append(problems, e.Error())
		}
		if cur != nil && !cur.Expires.IsZero() && !now.Before(cur.Expires) {
			cur = nil
		}
		if cur != nil {
			next.Docs[d] = cur
		}
	}
	if prev != nil && read == nil { // the store could not be read: keep the rejections known
		for d, why := range prev.Rejected {
			next.Rejected[d] = why
		}
	}
	return next, problems
}

// ReadDoc is a document as read from the store, with its expiry.
type ReadDoc struct {
	Env     contract.Envelope
	Expires time.Time
}

// Expire drops documents past their TTL from st (a copy when any is).
func Expire(st *State, now time.Time) *State {
	n := 0
	for _, d := range st.Docs {
		if !d.Expires.IsZero() && !now.Before(d.Expires) {
			n++
		}
	}
	if n == 0 {
		return st
	}
	next := &State{Docs: map[contract.Domain]*Doc{}, Rejected: st.Rejected, Statuses: st.Statuses, Hist: st.Hist}
	for k, d := range st.Docs {
		if d.Expires.IsZero() || now.Before(d.Expires) {
			next.Docs[k] = d
		}
	}
	return next
}

// StoreHealth is the outcome of the last reads of the store.
type StoreHealth struct {
	OK        bool
	CheckedAt time.Time
	LastOK    time.Time
	// Err is a generic description: never an address or a password.
	Err string
}
