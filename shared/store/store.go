// Package store keeps the domain documents and status records of
// package contract, in Redis or in memory.
//
// A Backend moves bytes (SET with TTL, several SETs as one atomic step, a
// size-limited multi-GET with remaining TTL, a per-key size and TTL
// without the value, existence checks, publish/subscribe, ping); Store
// sits on a Backend and does everything else — keys, envelopes,
// validation, update notifications — once, for both.
//
// Every read is bounded: a value above the read's limit is never read
// whole (DefaultMaxValueBytes for Store's own reads, the caller's for a
// Reader).
//
// The store also keeps the token's history (history.go): a successful
// poll's samples are appended with its document in one atomic step, into
// three tiers per measure (every sample, 5-minute and 1-hour buckets),
// each trimmed by time and count; History reads one window from one tier
// in one bounded read, and Gaps says where samples are missing.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// ErrNotFound is returned when a key is absent (never written, or expired).
var ErrNotFound = errors.New("not found")

// ErrTooLarge is wrapped by the error of a value above a read's limit.
var ErrTooLarge = errors.New("stored value above the size limit")

// DefaultMaxValueBytes bounds a value Store reads: the largest document
// is a few tens of KiB, a status record a few KiB.
const DefaultMaxValueBytes = 1 << 20

// Value is what a Backend holds under one key.
type Value struct {
	// Data is the value; nil when TooLarge.
	Data []byte
	// TTL is the remaining time to live; 0 means the key has no expiry,
	// which Store refuses for a document (it would never go away).
	TTL   time.Duration
	Found bool
	// Size is the value's length in bytes.
	Size int64
	// TooLarge is set when Size is above the read's limit: the value was
	// not read.
	TooLarge bool
}

// Stat is what a Backend tells of a key without reading its value: a
// fingerprint, since every write changes the length or restarts the TTL.
type Stat struct {
	Found bool
	// Size is the value's length in bytes.
	Size int64
	// TTL is the remaining time to live, as in Value.
	TTL time.Duration
}

// Subscription delivers published messages until closed.
type Subscription interface {
	// C delivers messages. It is closed when the subscription ends.
	C() <-chan string
	Close() error
}

// Entry is one value to store with SetAll.
type Entry struct {
	Key   string
	Value []byte
	// TTL is the value's time to live (> 0).
	TTL time.Duration
}

// Backend is the byte-level storage both implementations provide.
type Backend interface {
	// Set stores value under key for ttl (ttl > 0).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// SetAll stores every entry in one atomic step: a reader sees all of
	// them or none of them, and a writer that dies in the middle leaves
	// none. (On a Redis Cluster, where keys of one token live in
	// different slots, the entries are written one after the other, in
	// order, each atomic on its own: see Redis.SetAll.)
	SetAll(ctx context.Context, entries ...Entry) error
	// MGet returns one Value per key, in order; absent keys have Found
	// false. It reads at most limit bytes (> 0) of a value: a longer one
	// comes back TooLarge, with its Size and no Data.
	MGet(ctx context.Context, limit int64, keys ...string) ([]Value, error)
	// Stat returns each key's size and remaining TTL, in order, without
	// reading the values.
	Stat(ctx context.Context, keys ...string) ([]Stat, error)
	// Exists reports, per key and in order, whether it is present (a key
	// past its TTL is not), without moving its value.
	Exists(ctx context.Context, keys ...string) ([]bool, error)
	Publish(ctx context.Context, channel, message string) error
	// Subscribe listens on channel; the subscription survives reconnects.
	// It returns once the subscription is live (or, when the backend is
	// unreachable, pending until it is back): a message published after
	// it returns is delivered (best effort: a subscriber that does not keep
	// up loses messages), one whose Publish returned before it was called
	// is not.
	Subscribe(ctx context.Context, channel string) (Subscription, error)
	Ping(ctx context.Context) error
	Close() error

	// Append stores every entry, as SetAll, and applies every op to its
	// series, in one atomic step (on a Redis Cluster, the entries first in
	// order, then each series on its own).
	Append(ctx context.Context, entries []Entry, ops []SeriesOp) error
	// LoadSeries puts an import's points into a series (see SeriesLoad)
	// and returns how many it put.
	LoadSeries(ctx context.Context, l SeriesLoad) (int, error)
	// ReadSeries returns the newest limit (> 0) points of key whose score
	// lies in [from, to], oldest first.
	ReadSeries(ctx context.Context, key string, from, to int64, limit int) (SeriesRange, error)
}

// Store reads and writes the documents of one token, and its history.
type Store struct {
	b         Backend
	mint      string
	retention Retention
	now       func() time.Time
}

// Option tunes a Store.
type Option func(*Store)

// New returns a Store for the token mint over b.
func New(b Backend, mint string, opts ...Option) *Store {
	s := &Store{b: b, mint: mint, retention: DefaultRetention, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Mint is the token this store serves.
func (s *Store) Mint() string { return s.mint }

// Backend returns the underlying backend.
func (s *Store) Backend() Backend { return s.b }

// Document is a stored envelope and its remaining time to live.
type Document struct {
	contract.Envelope
	TTL time.Duration
}

// Write stores env under its domain key for ttl with one SET, then
// publishes the domain on the updates channel. A failed publish is
// returned but the document stays written: readers also poll.
//
// The samples, when there are any, are the document's values to append
// to the history (one per measure, each of the envelope's domain): they
// are written in the same atomic step as the document, at its updated_at
// (see History). A collector passes them for a successful poll only,
// never when it writes back a document the store lost.
func (s *Store) Write(ctx context.Context, env contract.Envelope, ttl time.Duration, samples ...contract.Sample) error {
	b, err := s.encode(env, ttl)
	if err != nil {
		return err
	}
	if err := s.put(ctx, env, samples, Entry{Key: contract.DocumentKey(s.mint, env.Domain), Value: b, TTL: ttl}); err != nil {
		return fmt.Errorf("write %s: %w", env.Domain, err)
	}
	return s.announce(ctx, env.Domain)
}

// Commit is how a collector writes a good poll: the document, as Write
// does, the collector's status record that records the run and the
// poll's history samples, in one atomic step (MULTI/EXEC or one script on
// Redis), then the update notification. No reader ever sees the document
// without the run that wrote it, and a collector killed in the middle
// leaves neither.
func (s *Store) Commit(ctx context.Context, env contract.Envelope, ttl time.Duration, st contract.Status, samples ...contract.Sample) error {
	b, err := s.encode(env, ttl)
	if err != nil {
		return err
	}
	sb, err := encodeStatus(st)
	if err != nil {
		return err
	}
	// The status record goes first: on a Redis Cluster, where the two keys
	// lie in different slots, the entries are written one after the other
	// in this order, so that a reader that reads the document and then the
	// status record (as the edge does) never sees a document newer than
	// the run that wrote it.
	if err := s.put(ctx, env, samples,
		Entry{Key: contract.StatusKey(s.mint, st.Collector), Value: sb, TTL: contract.StatusTTL},
		Entry{Key: contract.DocumentKey(s.mint, env.Domain), Value: b, TTL: ttl}); err != nil {
		return fmt.Errorf("write %s and the status of %s: %w", env.Domain, st.Collector, err)
	}
	return s.announce(ctx, env.Domain)
}

// put stores entries, with the samples' history ops when there are any,
// in one atomic step.
func (s *Store) put(ctx context.Context, env contract.Envelope, samples []contract.Sample, entries ...Entry) error {
	ops, err := s.sampleOps(env, samples)
	if err != nil {
		return fmt.Errorf("refusing the samples: %w", err)
	}
	if len(ops) > 0 {
		return s.b.Append(ctx, entries, ops)
	}
	if len(entries) == 1 {
		return s.b.Set(ctx, entries[0].Key, entries[0].Value, entries[0].TTL)
	}
	return s.b.SetAll(ctx, entries...)
}

// encode checks and encodes a document to write.
func (s *Store) encode(env contract.Envelope, ttl time.Duration) ([]byte, error) {
	if err := env.Validate(); err != nil {
		return nil, fmt.Errorf("refusing to write %s: %w", env.Domain, err)
	}
	if env.Mint != s.mint {
		return nil, fmt.Errorf("refusing to write %s of mint %s into the store of %s", env.Domain, env.Mint, s.mint)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("refusing to write %s without a ttl", env.Domain)
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode %s envelope: %w", env.Domain, err)
	}
	return b, nil
}

// announce publishes an update of d.
func (s *Store) announce(ctx context.Context, d contract.Domain) error {
	if err := s.b.Publish(ctx, contract.UpdatesChannel(s.mint), string(d)); err != nil {
		return fmt.Errorf("publish %s update: %w", d, err)
	}
	return nil
}

// Read returns the document of one domain: ErrNotFound when absent,
// contract.ErrUnknownSchema (wrapped) when written by a newer schema.
func (s *Store) Read(ctx context.Context, d contract.Domain) (Document, error) {
	docs, errs, err := s.ReadAll(ctx, d)
	if err != nil {
		return Document{}, err
	}
	if e := errs[d]; e != nil {
		return Document{}, e
	}
	doc, ok := docs[d]
	if !ok {
		return Document{}, fmt.Errorf("%s: %w", d, ErrNotFound)
	}
	return doc, nil
}

// ReadAll returns the documents of the given domains (all four when none
// is named) in one round trip. Absent domains are missing from the map;
// a domain whose value cannot be used (unknown schema_version, garbage,
// larger than DefaultMaxValueBytes) is in errs instead. err is set only
// when the backend failed.
func (s *Store) ReadAll(ctx context.Context, domains ...contract.Domain) (docs map[contract.Domain]Document, errs map[contract.Domain]error, err error) {
	if len(domains) == 0 {
		domains = contract.Domains
	}
	keys := make([]string, len(domains))
	for i, d := range domains {
		keys[i] = contract.DocumentKey(s.mint, d)
	}
	vals, err := s.b.MGet(ctx, DefaultMaxValueBytes, keys...)
	if err != nil {
		return nil, nil, fmt.Errorf("read documents: %w", err)
	}
	docs = make(map[contract.Domain]Document, len(domains))
	errs = map[contract.Domain]error{}
	for i, v := range vals {
		if !v.Found {
			continue
		}
		d := domains[i]
		if doc, err := s.document(d, v, DefaultMaxValueBytes); err != nil {
			errs[d] = err
		} else {
			docs[d] = doc
		}
	}
	return docs, errs, nil
}

// document checks and decodes the value found under d's key.
func (s *Store) document(d contract.Domain, v Value, limit int64) (Document, error) {
	if v.TooLarge {
		return Document{}, tooLarge(d, v.Size, limit)
	}
	if v.TTL <= 0 {
		// every writer sets a TTL: a key without one was written by
		// hand or by something else, and would outlive every contract
		return Document{}, fmt.Errorf("%s: key has no TTL", d)
	}
	var env contract.Envelope
	if err := json.Unmarshal(v.Data, &env); err != nil {
		return Document{}, fmt.Errorf("%s: undecodable envelope: %w", d, err)
	}
	if err := env.Validate(); err != nil {
		return Document{}, fmt.Errorf("%s: %w", d, err)
	}
	if env.Domain != d || env.Mint != s.mint {
		// %.64q: the fields are another writer's, of any length
		return Document{}, fmt.Errorf("%s: key holds %.64q of mint %.64q", d, env.Domain, env.Mint)
	}
	return Document{Envelope: env, TTL: v.TTL}, nil
}

func tooLarge(d contract.Domain, size, limit int64) error {
	return fmt.Errorf("%s: %w: %d bytes, more than %d; not read", d, ErrTooLarge, size, limit)
}

// WriteStatus stores a collector's status record.
func (s *Store) WriteStatus(ctx context.Context, st contract.Status) error {
	b, err := encodeStatus(st)
	if err != nil {
		return err
	}
	if err := s.b.Set(ctx, contract.StatusKey(s.mint, st.Collector), b, contract.StatusTTL); err != nil {
		return fmt.Errorf("write status of %s: %w", st.Collector, err)
	}
	return nil
}

func encodeStatus(st contract.Status) ([]byte, error) {
	if st.Collector == "" {
		return nil, errors.New("refusing to write a status record without a collector")
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	return b, nil
}

// ReadStatuses returns the status records of every collector that has one.
func (s *Store) ReadStatuses(ctx context.Context) (map[string]contract.Status, error) {
	vals, err := s.b.MGet(ctx, DefaultMaxValueBytes, s.statusKeys()...)
	if err != nil {
		return nil, fmt.Errorf("read status records: %w", err)
	}
	out := make(map[string]contract.Status, len(vals))
	for i, v := range vals {
		if st, ok := status(v); ok {
			out[contract.Collectors[i]] = st
		}
	}
	return out, nil
}

// Missing reports, in one round trip and without reading any value, which
// of the domains have no document and whether the status record of
// collector is gone ("" checks no status record). A collector calls it
// often to notice that the store lost what it wrote (a Redis restart
// without persistence, a FLUSHALL, an eviction).
func (s *Store) Missing(ctx context.Context, collector string, domains ...contract.Domain) (docs []contract.Domain, status bool, err error) {
	keys := make([]string, 0, len(domains)+1)
	for _, d := range domains {
		keys = append(keys, contract.DocumentKey(s.mint, d))
	}
	if collector != "" {
		keys = append(keys, contract.StatusKey(s.mint, collector))
	}
	if len(keys) == 0 {
		return nil, false, nil
	}
	found, err := s.b.Exists(ctx, keys...)
	if err != nil {
		return nil, false, fmt.Errorf("check keys: %w", err)
	}
	for i, d := range domains {
		if !found[i] {
			docs = append(docs, d)
		}
	}
	return docs, collector != "" && !found[len(found)-1], nil
}

func (s *Store) statusKeys() []string {
	keys := make([]string, len(contract.Collectors))
	for i, c := range contract.Collectors {
		keys[i] = contract.StatusKey(s.mint, c)
	}
	return keys
}

// status decodes a status record; a record that is absent, too large or
// unreadable is as good as none.
func status(v Value) (contract.Status, bool) {
	var st contract.Status
	if !v.Found || v.TooLarge || json.Unmarshal(v.Data, &st) != nil {
		return contract.Status{}, false
	}
	return st, true
}

// Updates subscribes to the updates channel: each message is a domain
// name. Unknown names are dropped. It returns once the subscription is
// live (Backend.Subscribe): a write after it returns is announced on the
// channel, a write that returned before it was called is not.
func (s *Store) Updates(ctx context.Context) (<-chan contract.Domain, func() error, error) {
	sub, err := s.b.Subscribe(ctx, contract.UpdatesChannel(s.mint))
	if err != nil {
		return nil, nil, fmt.Errorf("subscribe to updates: %w", err)
	}
	out := make(chan contract.Domain, 16)
	go func() {
		defer close(out)
		for msg := range sub.C() {
			d := contract.Domain(msg)
			if !d.Valid() {
				continue
			}
			select {
			case out <- d:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, sub.Close, nil
}

// Ping checks the backend.
func (s *Store) Ping(ctx context.Context) error { return s.b.Ping(ctx) }

// Close closes the backend.
func (s *Store) Close() error { return s.b.Close() }
