// Package connegtest holds the Accept-Encoding cases that the negotiation
// tests of services/edge/conneg and of the edge over HTTP share.
package connegtest

import "github.com/tokendata/tokendata/services/edge/answer"

// AllCodings is the offer of an answer the edge holds in every coding:
// identity, gzip and br, the offer Cases are picked from.
const AllCodings = answer.Offer(1<<answer.CodingIdentity | 1<<answer.CodingGzip | 1<<answer.CodingBrotli)

// Case is an Accept-Encoding field list and the coding the
// edge must pick for it.
type Case struct {
	Fields []string // nil: no field
	Want   answer.Coding
}

// Cases are Accept-Encoding field lines and the coding the
// edge must pick when it has gzip and br (the negotiation tests of
// services/edge/conneg and of the edge over HTTP).
var Cases = []Case{
	{nil, answer.CodingIdentity},
	{[]string{""}, answer.CodingIdentity},
	{[]string{"gzip"}, answer.CodingGzip},
	{[]string{"br"}, answer.CodingBrotli},
	{[]string{"gzip, deflate, br, zstd"}, answer.CodingBrotli},
	{[]string{"gzip, br"}, answer.CodingBrotli},
	{[]string{"br;q=0.5, gzip"}, answer.CodingGzip},
	{[]string{"gzip;q=0.8, br;q=0.8"}, answer.CodingBrotli},
	{[]string{"gzip;q=0.801, br;q=0.8"}, answer.CodingGzip},
	{[]string{"gzip;q=1.000, br;q=0.999"}, answer.CodingGzip},
	{[]string{"BR;Q=1, GZIP"}, answer.CodingBrotli},
	{[]string{"Gzip"}, answer.CodingGzip},
	{[]string{"x-gzip"}, answer.CodingGzip},
	{[]string{"identity"}, answer.CodingIdentity},
	{[]string{"identity, gzip"}, answer.CodingGzip},
	{[]string{"identity;q=1, gzip;q=0.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.5"}, answer.CodingGzip},
	{[]string{"*"}, answer.CodingBrotli},
	{[]string{"*;q=0"}, answer.CodingIdentity},
	{[]string{"*;q=0.5, identity"}, answer.CodingIdentity},
	{[]string{"br;q=0, *"}, answer.CodingGzip},
	{[]string{"gzip;q=0"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.000, br;q=0"}, answer.CodingIdentity},
	{[]string{"gzip, gzip;q=0"}, answer.CodingIdentity}, // listed twice: the lower weight
	{[]string{"x-gzip;q=0, gzip"}, answer.CodingIdentity},
	{[]string{"identity;q=0"}, answer.CodingIdentity}, // nothing acceptable: identity all the same
	{[]string{"deflate, zstd, compress"}, answer.CodingIdentity},
	{[]string{" , ,gzip ,"}, answer.CodingGzip},
	{[]string{"gzip\t;\tq=0.5"}, answer.CodingGzip},
	{[]string{"gzip;q=0.1", "br;q=0.2"}, answer.CodingBrotli}, // two field lines
	{[]string{"br", "gzip;q=0"}, answer.CodingBrotli},
	// malformed: identity, never an error
	{[]string{"gzip;q=2"}, answer.CodingIdentity},
	{[]string{"gzip;q=1.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=0.5555"}, answer.CodingIdentity},
	{[]string{"gzip;q=.5"}, answer.CodingIdentity},
	{[]string{"gzip;q="}, answer.CodingIdentity},
	{[]string{"gzip;q"}, answer.CodingIdentity},
	{[]string{"gzip;q = 0.5"}, answer.CodingIdentity},
	{[]string{"gzip;q=abc"}, answer.CodingIdentity},
	{[]string{"br;level=5"}, answer.CodingIdentity},
	{[]string{"gzip br"}, answer.CodingIdentity},
	{[]string{`"gzip"`}, answer.CodingIdentity},
	{[]string{"gzip;"}, answer.CodingIdentity},
	{[]string{"gzip", "br;q=x"}, answer.CodingIdentity},
	{[]string{"gzïp, br"}, answer.CodingIdentity},
}

// Name is a coding's name in test messages: its Content-Encoding token, or
// identity.
func Name(c answer.Coding) string {
	if c == answer.CodingIdentity {
		return "identity"
	}
	return answer.CodingNames[c]
}
