package tally

import (
	"hash/maphash"
	"math/bits"
)

// keySet is a compact set of 32-byte keys (addresses), each with a stable
// index, its order of insertion, and, when made with values, a uint32
// value per key. Keys live in fixed 1 MiB chunks (32 bytes each, never
// copied), values in chunks of the same length beside them, and an
// open-addressing table of 4-byte slots at a load factor of at most 3/4
// finds them: a table of 2^k slots holds a key's index+1 in its low k
// bits (a table holds fewer keys than slots) and the top 32-k bits of
// its hash above, so that most probes of another key read no key. That
// is 37 to 43 bytes a key as the table doubles (4 more with values),
// against 60 to 80 for a Go map of the same keys. Keys are never
// removed. A set made with an arena keeps its chunks and table there,
// outside the Go heap (a live tally's).
type keySet struct {
	arena  *arena // nil: the Go heap
	seed   maphash.Seed
	chunks [][]Owner
	vals   [][]uint32 // nil unless made with values
	values bool
	n      uint32
	slots  []uint32 // 0: empty; else (hash &^ mask) | (index+1)
	mask   uint32
}

const (
	chunkBits = 15 // 32,768 keys (1 MiB) per chunk
	chunkLen  = 1 << chunkBits
	minSlots  = 1 << 12
	ownerSize = int64(len(Owner{}))
	slotSize  = 4
)

func newKeySet(values bool, a *arena) keySet {
	return keySet{arena: a, seed: maphash.MakeSeed(), values: values, slots: arenaSlice[uint32](a, minSlots), mask: minSlots - 1}
}

// len is the number of keys.
func (s *keySet) len() uint32 { return s.n }

// bytes is the set's memory: key chunks, value chunks and the table.
func (s *keySet) bytes() int64 {
	return int64(len(s.chunks))*s.chunkBytes() + int64(len(s.slots))*slotSize
}

func (s *keySet) chunkBytes() int64 {
	if s.values {
		return chunkLen * (ownerSize + 4)
	}
	return chunkLen * ownerSize
}

// growth is what the next insert adds to bytes: a new chunk, the table
// doubled, or nothing (most inserts).
func (s *keySet) growth() int64 {
	var g int64
	if s.n>>chunkBits == uint32(len(s.chunks)) {
		g += s.chunkBytes()
	}
	if uint64(s.n+1)*4 > uint64(len(s.slots))*3 {
		g += int64(len(s.slots)) * slotSize
	}
	return g
}

func (s *keySet) hash(k *Owner) uint32 { return uint32(maphash.Bytes(s.seed, k[:]) >> 32) }

func (s *keySet) key(i uint32) *Owner { return &s.chunks[i>>chunkBits][i&(chunkLen-1)] }

// value is key i's value (a set made with values).
func (s *keySet) value(i uint32) *uint32 { return &s.vals[i>>chunkBits][i&(chunkLen-1)] }

// find returns the index of k, whose hash is h.
func (s *keySet) find(k *Owner, h uint32) (uint32, bool) {
	tag := h &^ s.mask
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		v := s.slots[i]
		if v == 0 {
			return 0, false
		}
		if v&^s.mask == tag && *s.key(v&s.mask - 1) == *k {
			return v&s.mask - 1, true
		}
	}
}

// insert adds k, whose hash is h and which find did not find, and returns
// its index; its value starts at 0.
func (s *keySet) insert(k *Owner, h uint32) uint32 {
	idx := s.n
	if idx>>chunkBits == uint32(len(s.chunks)) {
		s.chunks = append(s.chunks, arenaSlice[Owner](s.arena, chunkLen))
		if s.values {
			s.vals = append(s.vals, arenaSlice[uint32](s.arena, chunkLen))
		}
	}
	*s.key(idx) = *k
	s.n++
	if uint64(s.n)*4 > uint64(len(s.slots))*3 {
		s.grow() // places every key, this one too
		return idx
	}
	s.place(idx, h)
	return idx
}

// place puts key idx, whose hash is h, in the table.
func (s *keySet) place(idx, h uint32) {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		if s.slots[i] == 0 {
			s.slots[i] = h&^s.mask | (idx + 1)
			return
		}
	}
}

// grow doubles the table and places every key again, hashed from its
// chunk (in order of insertion: the chunks are read once, in sequence).
func (s *keySet) grow() {
	old := s.slots
	size := len(old) * 2
	if bits.Len(uint(size)) > 32 {
		panic("holders: key set above 2^31 entries")
	}
	s.slots = arenaSlice[uint32](s.arena, size)
	s.mask = uint32(size - 1)
	arenaFree(s.arena, old)
	for i := range s.n {
		s.place(i, s.hash(s.key(i)))
	}
}
