package wire

import "github.com/tokendata/tokendata/shared/contract"

// The requests whose answers this package decodes: their params, as the
// collector sends them to the node.

// Query is one getProgramAccounts query of the enumeration.
type Query struct {
	program string
	filters []any
	// Description is the query in words, for the document.
	Description string
}

// Params are the query's params: base64 accounts sliced to their owner
// and amount (the 40 bytes DecodeProgramAccounts reads), with their
// context slot, at commitment; minContextSlot, when set, is the slot of
// the count last published.
func (q Query) Params(commitment string, minContextSlot *uint64) []any {
	return []any{q.program, gpaConfig{Encoding: "base64", Commitment: commitment,
		DataSlice: dataSlice{sliceOffset, sliceLen}, Filters: q.filters, WithContext: true, MinContextSlot: minContextSlot}}
}

// gpaConfig is the getProgramAccounts config object.
type gpaConfig struct {
	Encoding    string    `json:"encoding"`
	Commitment  string    `json:"commitment"`
	DataSlice   dataSlice `json:"dataSlice"`
	Filters     []any     `json:"filters"`
	WithContext bool      `json:"withContext"`
	// MinContextSlot is the slot of the count last published: a node
	// behind it answers -32016 rather than an older count.
	MinContextSlot *uint64 `json:"minContextSlot,omitempty"`
}

type dataSlice struct {
	Offset int `json:"offset"`
	Length int `json:"length"`
}

type dataSizeFilter struct {
	DataSize int `json:"dataSize"`
}

type memcmpFilter struct {
	Memcmp memcmp `json:"memcmp"`
}

type memcmp struct {
	Offset int    `json:"offset"`
	Bytes  string `json:"bytes"`
}

// Queries are the node-indexed queries that together list every token
// account of mint under program (services/holders/README.md).
func Queries(program, mint string) []Query {
	byMint := memcmpFilter{memcmp{Offset: 0, Bytes: mint}}
	qs := []Query{{
		program: program,
		filters: []any{dataSizeFilter{165}, byMint},
	}}
	if program == contract.ProgramIDToken2022 {
		qs[0].Description = "getProgramAccounts spl-token-2022: dataSize 165, memcmp mint at 0"
		// "3" is base58 of the byte 2: AccountType::Account at offset 165.
		qs = append(qs, Query{program: program, filters: []any{byMint, memcmpFilter{memcmp{Offset: 165, Bytes: "3"}}},
			Description: "getProgramAccounts spl-token-2022: memcmp mint at 0, memcmp account type 2 at 165"})
	} else {
		qs[0].Description = "getProgramAccounts spl-token: dataSize 165, memcmp mint at 0"
	}
	return qs
}

// AccountOwnerParams are the params of the getAccountInfo whose answer
// DecodeAccountOwner reads: account at commitment, base64, without its
// data (a slice of length 0).
func AccountOwnerParams(account, commitment string) []any {
	return []any{account, map[string]any{"encoding": "base64", "commitment": commitment,
		"dataSlice": dataSlice{0, 0}}}
}
