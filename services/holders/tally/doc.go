// Package tally holds the holders collector's tallies: the sets of 32-byte
// addresses it counts with, bounded in memory, and the counts made of
// them. Count is one enumeration's (the owners with a positive balance,
// and the token and non-zero accounts seen); Live is the count kept exact
// between enumerations, from each token account's whole new state. Both
// keep their keys in a compact key set (keyset.go) and stop at their
// ceilings with a *LimitError; a Live's sets are mapped outside the Go
// heap (arena.go).
//
// It reads no wire and knows no node, socket or store: the decoders of
// services/holders/wire fill its tallies, services/holders/follow keeps a
// Live on a subscription, and the collector (services/holders) publishes
// their figures.
package tally
