// Package wire is the holders collector's side of the Solana wire: the
// params of the requests it sends, and the answers and notifications it
// reads, decoded straight into the tallies of services/holders/tally.
//
// A getProgramAccounts answer is streamed through a hand-written
// incremental JSON scanner over a fixed window (scan.go, scan_values.go:
// the standard library alone): the response is never held, and each
// account's 40 bytes are decoded into fixed arrays (DecodeProgramAccounts
// into a Count, DecodeProgramAccountsLive into a Live). Decoding and
// counting run on two goroutines, handing accounts over in a fixed set of
// batches (pipeline.go). Beside it: the owner of a getAccountInfo answer
// (DecodeAccountOwner), the pages of Helius DAS getTokenAccounts
// (DecodeDASPage), the token program's programNotification messages
// (DecodeProgramNotification) and base58 addresses (DecodeAddress).
//
// A broken, truncated or invalid answer is an error (*SyntaxError,
// *StreamError, ErrTruncated; a JSON-RPC error object is an *RPCError),
// never a count. The package sends nothing and links no HTTP client, no
// socket and no store: the collector (services/holders) makes the calls
// and classifies these errors.
package wire
