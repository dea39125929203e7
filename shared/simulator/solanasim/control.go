package solanasim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// ControlPrefix is the path prefix of the simulator's control endpoint,
// served on the RPC port of the server and of every node (one ledger):
//
//	POST /_simulator/burn?amount=N   burns N base units of the token
//	POST /_simulator/mint?amount=N   mints N base units
//
// Both take an optional mint=<address> (default: the first token added),
// change the supply as SetSupply does (the holder set is unchanged), and
// answer 200 {"mint":"…","supply":"<base units after>","slot":N}; 400 for a
// bad amount or one that would take the supply below 0 or past 2^64-1,
// 404 for an unknown mint, 405 for any method but POST. It is a
// simulator's: no real node has it.
const ControlPrefix = "/_simulator/"

// AdjustSupply adds delta base units to mint's supply (negative: a burn)
// and returns the new supply; "" is the first token added.
func (s *Server) AdjustSupply(mint string, delta int64) (uint64, error) {
	if mint == "" {
		s.mu.RLock()
		k, ok := s.defaultMint, s.hasDefault
		s.mu.RUnlock()
		if !ok {
			return 0, fmt.Errorf("solanasim: no token")
		}
		mint = k.String()
	}
	var after uint64
	err := s.update(mint, func(m *mintState) error {
		switch {
		case delta < 0 && uint64(-delta) > m.supply:
			return fmt.Errorf("solanasim: burning %d of a supply of %d", -delta, m.supply)
		case delta > 0 && uint64(delta) > math.MaxUint64-m.supply:
			return fmt.Errorf("solanasim: minting %d over a supply of %d passes 2^64-1", delta, m.supply)
		}
		if delta < 0 {
			m.supply -= uint64(-delta)
		} else {
			m.supply += uint64(delta)
		}
		after = m.supply
		return nil
	})
	return after, err
}

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, ControlPrefix)
	if op != "burn" && op != "mint" {
		http.Error(w, "unknown control: POST /_simulator/burn?amount=N or /_simulator/mint?amount=N", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	n, err := strconv.ParseInt(q.Get("amount"), 10, 64)
	if err != nil || n <= 0 {
		http.Error(w, "amount: a number of base units above 0 is required", http.StatusBadRequest)
		return
	}
	if op == "burn" {
		n = -n
	}
	mint := q.Get("mint")
	if mint != "" && s.token(mint) == nil {
		http.Error(w, "unknown mint", http.StatusNotFound)
		return
	}
	after, err := s.AdjustSupply(mint, n)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if mint == "" {
		s.mu.RLock()
		mint = s.defaultMint.String()
		s.mu.RUnlock()
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"mint": mint, "supply": strconv.FormatUint(after, 10), "slot": s.Slot()})
}
