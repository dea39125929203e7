package solanasim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tokendata/tokendata/shared/simulator/solanasim/ledger"
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
// 404 for an unknown mint, 405 for any method but POST.
//
// The holder changes (ledger/holderedits.go), each a transaction at a
// new slot, the supply unchanged:
//
//	POST /_simulator/holders/new?amount=N            a new holder: a token account opened with N > 0, a new owner
//	POST /_simulator/holders/open                    a token account opened at 0, a new owner
//	POST /_simulator/holders/sellout?account=A       A's balance to 0
//	POST /_simulator/holders/back?account=A&amount=N A's balance from 0 to N > 0
//	POST /_simulator/holders/move?from=A&to=B&amount=N  N > 0 moved from A to B in one slot
//	POST /_simulator/holders/close?account=A         A closed; refused unless its balance is 0
//
// Each takes an optional mint= as above and answers 200
// {"mint":"…","slot":N,"accounts":[{"address":"…","owner":"…","amount":"<base units>","closed":false},…]}
// (the accounts as the change left them); 400 for a bad parameter or a
// change refused (with why), 404 for an unknown mint or account (a
// closed one included), 405 for any method but POST. HandleControl adds
// operations (the simulator package's /_simulator/faults). The control
// endpoint is a simulator's: no real node has it.
const ControlPrefix = "/_simulator/"

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, ControlPrefix)
	if h, ok := s.controls.Load(op); ok {
		h.(http.Handler).ServeHTTP(w, r)
		return
	}
	if change, ok := strings.CutPrefix(op, "holders/"); ok {
		s.serveHolderChange(w, r, change)
		return
	}
	if op != "burn" && op != "mint" {
		http.Error(w, "unknown control: POST /_simulator/burn?amount=N, /_simulator/mint?amount=N, /_simulator/holders/<change> or /_simulator/faults?set=<route=kind>", http.StatusNotFound)
		return
	}
	if !postOnly(w, r) {
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
	if _, ok := s.ledger.Supply(mint); mint != "" && !ok {
		http.Error(w, "unknown mint", http.StatusNotFound)
		return
	}
	ch, err := s.ledger.AdjustSupply(mint, n)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"mint": ch.Mint, "supply": strconv.FormatUint(ch.Supply, 10), "slot": ch.Slot})
}

// postOnly answers 405 to any method but POST, and reports whether r is
// a POST.
func postOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", "POST")
	http.Error(w, "POST only", http.StatusMethodNotAllowed)
	return false
}

// serveHolderChange answers POST /_simulator/holders/<change>.
func (s *Server) serveHolderChange(w http.ResponseWriter, r *http.Request, change string) {
	switch change {
	case "new", "open", "sellout", "back", "move", "close":
	default:
		http.Error(w, "unknown holder change: new, open, sellout, back, move or close", http.StatusNotFound)
		return
	}
	if !postOnly(w, r) {
		return
	}
	q := r.URL.Query()
	mint := q.Get("mint")
	amount := func() (uint64, bool) {
		n, err := strconv.ParseUint(q.Get("amount"), 10, 64)
		if err != nil || n == 0 {
			http.Error(w, "amount: a number of base units above 0 is required", http.StatusBadRequest)
			return 0, false
		}
		return n, true
	}
	account := func(name string) (string, bool) {
		a := q.Get(name)
		if _, err := ledger.ParseKey(a); err != nil {
			http.Error(w, name+": the address of a token account of the mint is required", http.StatusBadRequest)
			return "", false
		}
		return a, true
	}
	var (
		ch  HolderChange
		err error
	)
	switch change {
	case "new":
		n, ok := amount()
		if !ok {
			return
		}
		ch, err = s.OpenHolder(mint, n)
	case "open":
		ch, err = s.OpenHolder(mint, 0)
	case "sellout":
		a, ok := account("account")
		if !ok {
			return
		}
		ch, err = s.SetHolderBalance(mint, a, 0)
	case "back":
		a, ok := account("account")
		if !ok {
			return
		}
		n, ok := amount()
		if !ok {
			return
		}
		ch, err = s.ledger.BackHolder(mint, a, n)
	case "move":
		from, ok := account("from")
		if !ok {
			return
		}
		to, ok := account("to")
		if !ok {
			return
		}
		n, ok := amount()
		if !ok {
			return
		}
		ch, err = s.MoveHolderBalance(mint, from, to, n)
	case "close":
		a, ok := account("account")
		if !ok {
			return
		}
		ch, err = s.CloseHolderAccount(mint, a)
	}
	switch {
	case errors.Is(err, ledger.ErrUnknownMint) || errors.Is(err, ledger.ErrUnknownAccount):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(ch)
}
