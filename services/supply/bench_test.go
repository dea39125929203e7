package supply

import (
	"context"
	"testing"

	"github.com/tokendata/tokendata/shared/contract"
)

// BenchmarkPollSupply measures one supply poll end to end: getTokenSupply
// and getAccountInfo over loopback HTTP to the simulator, validation, the
// document and its write to the in-memory store.
func BenchmarkPollSupply(b *testing.B) {
	f := newFixture(b, t22six(), fixtureOpts{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.c.RunOnce(ctx, contract.DomainSupply); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollMetadata measures one metadata poll through the Metaplex
// fallback (two account reads).
func BenchmarkPollMetadata(b *testing.B) {
	f := newFixture(b, classic9(), fixtureOpts{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.c.RunOnce(ctx, contract.DomainMetadata); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeMint measures the Token-2022 mint decode and TLV walk
// with the metadata extension parsed.
func BenchmarkDecodeMint(b *testing.B) {
	md := tokenMetadataValue(keyBytes("ua"), keyBytes("mint"), "Demo Token", "DEMO", "https://example.org/d.json")
	data := withExtensions(mintBytes(keyBytes("a"), 1234, 9, keyBytes("f")), tlv{extMetadataPointer, make([]byte, 64)}, tlv{extTokenMetadata, md})
	b.ReportAllocs()
	for b.Loop() {
		m, err := decodeMint(data, true)
		if err != nil {
			b.Fatal(err)
		}
		v, _ := m.extension(extTokenMetadata)
		if _, err := parseTokenMetadata(v); err != nil {
			b.Fatal(err)
		}
	}
}
