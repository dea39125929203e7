package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Reader reads a Store's documents and status records over and over, for
// a process that mirrors them (the edge), and reads no more than it must.
//
// Each Read first fetches the status records (a few KiB, written without
// notification: every Read, within the limit), then asks every document
// key's size and remaining TTL (Backend.Stat), a fingerprint: a value
// above the limit is refused without being read, and a document is
// fetched again only when its fingerprint moved (every write changes the
// length or restarts the TTL) or when the caller names its domain (an
// update notification). The records come first so that a Read never
// holds a run newer than its documents: a good poll writes its document
// and its run in one commit, so a record read before the fingerprints
// names no run whose document the Read missed.
type Reader struct {
	s     *Store
	limit int64

	mu   sync.Mutex
	seen map[contract.Domain]seenDoc
}

// seenDoc is what the last fetch of a document key gave.
type seenDoc struct {
	stamp stamp
	doc   Document
	err   error
}

// stamp is a key's fingerprint: its length, and the interval in which its
// expiry lies (known to the round trip's precision, since the backend
// answers a remaining TTL).
type stamp struct {
	size    int64
	expires bool
	lo, hi  time.Time
}

// stampSlack covers PTTL's truncation to the millisecond.
const stampSlack = 2 * time.Millisecond

func newStamp(size int64, ttl time.Duration, before, after time.Time) stamp {
	if ttl <= 0 {
		return stamp{size: size}
	}
	return stamp{size: size, expires: true, lo: before.Add(ttl), hi: after.Add(ttl)}
}

// same reports whether a and b can be the same write: same length, and
// expiries that may be one instant. A rewrite moves the expiry by the time
// between the two writes; two writes of one length within a round trip
// of each other are told apart by the update notification only.
func (a stamp) same(b stamp) bool {
	if a.size != b.size || a.expires != b.expires {
		return false
	}
	return !a.expires || (!b.lo.After(a.hi.Add(stampSlack)) && !a.lo.After(b.hi.Add(stampSlack)))
}

// NewReader returns a Reader of s that reads at most limit bytes of a
// value (DefaultMaxValueBytes when limit ≤ 0).
func (s *Store) NewReader(limit int64) *Reader {
	if limit <= 0 {
		limit = DefaultMaxValueBytes
	}
	return &Reader{s: s, limit: limit, seen: map[contract.Domain]seenDoc{}}
}

// Limit is the most bytes the Reader reads of one value.
func (r *Reader) Limit() int64 { return r.limit }

// Snapshot is the outcome of one Read: Docs and Errs as ReadAll returns
// them, Statuses as ReadStatuses does.
type Snapshot struct {
	Docs     map[contract.Domain]Document
	Errs     map[contract.Domain]error
	Statuses map[string]contract.Status
	// Fetched counts the document values read this time.
	Fetched int
}

// Read returns every domain's document and every status record, fetching
// the documents of the fetch domains and those whose fingerprint moved
// since their last fetch; the others are the last fetch's, with the TTL
// remaining now. The documents are those of the runs the status records
// hold (readTries). err is set only when the backend failed.
func (r *Reader) Read(ctx context.Context, fetch ...contract.Domain) (Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fetched := 0
	for try := 1; ; try++ {
		snap, first, err := r.read(ctx, fetch)
		if err != nil {
			return Snapshot{}, err
		}
		fetched += snap.Fetched
		snap.Fetched = fetched
		if try == readTries {
			return snap, nil
		}
		again, err := r.s.b.MGet(ctx, r.limit, r.s.statusKeys()...)
		if err != nil {
			return Snapshot{}, fmt.Errorf("read status records: %w", err)
		}
		if sameValues(first, again) {
			return snap, nil
		}
	}
}

// readTries bounds the passes of one Read. A pass is consistent when the
// status records read after its documents are those read before them:
// every good poll commits its document with its status record in one
// transaction, so no commit landed between the two reads, and the
// documents are those of the runs the records hold (a pass that reads
// the records first alone could hold a document newer than its record,
// and one that reads them last a record newer than its documents). Each
// collector commits about once a refresh and a pass takes a few round
// trips, so a second pass is rare and a third rarer; the last pass is
// taken as it is, records first, so that a run is never newer than the
// documents beside it.
const readTries = 3

// sameValues reports whether a and b hold the same values.
func sameValues(a, b []Value) bool {
	return slices.EqualFunc(a, b, func(x, y Value) bool {
		return x.Found == y.Found && x.TooLarge == y.TooLarge && bytes.Equal(x.Data, y.Data)
	})
}

// read is one pass of Read: the status records (returned as read, for
// the consistency check), then the documents.
func (r *Reader) read(ctx context.Context, fetch []contract.Domain) (Snapshot, []Value, error) {
	domains, collectors := contract.Domains, contract.Collectors
	snap := Snapshot{Docs: map[contract.Domain]Document{}, Errs: map[contract.Domain]error{},
		Statuses: map[string]contract.Status{}}
	svals, err := r.s.b.MGet(ctx, r.limit, r.s.statusKeys()...)
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("read status records: %w", err)
	}
	for i, v := range svals {
		if st, ok := status(v); ok {
			snap.Statuses[collectors[i]] = st
		}
	}
	keys := make([]string, 0, len(domains))
	for _, d := range domains {
		keys = append(keys, contract.DocumentKey(r.s.mint, d))
	}

	before := time.Now()
	stats, err := r.s.b.Stat(ctx, keys...)
	after := time.Now()
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("read documents: %w", err)
	}
	// Decide what to fetch: idx are positions in keys.
	var idx []int
	for i, d := range domains {
		st := stats[i]
		switch {
		case !st.Found:
			delete(r.seen, d)
		case st.Size > r.limit:
			r.seen[d] = seenDoc{stamp: newStamp(st.Size, st.TTL, before, after), err: tooLarge(d, st.Size, r.limit)}
		default:
			prev, ok := r.seen[d]
			if !ok || slices.Contains(fetch, d) || !prev.stamp.same(newStamp(st.Size, st.TTL, before, after)) {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) > 0 {
		fkeys := make([]string, len(idx))
		for j, i := range idx {
			fkeys[j] = keys[i]
		}
		before = time.Now()
		vals, err := r.s.b.MGet(ctx, r.limit, fkeys...)
		after = time.Now()
		if err != nil {
			return Snapshot{}, nil, fmt.Errorf("read documents: %w", err)
		}
		for j, i := range idx {
			v := vals[j]
			d := domains[i]
			if !v.Found {
				delete(r.seen, d)
				continue
			}
			snap.Fetched++
			doc, err := r.s.document(d, v, r.limit)
			r.seen[d] = seenDoc{stamp: newStamp(v.Size, v.TTL, before, after), doc: doc, err: err}
			stats[i].TTL = v.TTL
		}
	}
	for i, d := range domains {
		sd, ok := r.seen[d]
		switch {
		case !ok:
		case sd.err != nil:
			snap.Errs[d] = sd.err
		default:
			doc := sd.doc
			doc.TTL = stats[i].TTL
			snap.Docs[d] = doc
		}
	}
	return snap, svals, nil
}
