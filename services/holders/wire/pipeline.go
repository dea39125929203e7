package wire

import (
	"errors"
	"sync/atomic"

	"github.com/tokendata/tokendata/services/holders/tally"
)

// The decoder and the owner set run on two goroutines. Inserting into the
// set is random access over tens of MiB (a cache and TLB miss an owner,
// page faults as it grows), decoding is a sequential scan of the stream:
// at 1,000,000 accounts each is about half of the work, and on two cores
// they overlap. The decoder hands accounts over in batches (a few channel
// operations per thousands of accounts), through a fixed set of batches
// that go round: memory stays bounded whatever the stream's length.

const (
	// batchLen accounts are handed over at a time (160 KiB a batch).
	batchLen = 4096
	// batches is how many batches go round: one filling, the others
	// queued or being counted.
	batches = 3
)

type batch struct {
	n        int
	owners   [batchLen]tally.Owner
	amounts  [batchLen]uint64
	accounts *[batchLen]tally.Owner // the accounts' own addresses: a Live's only
}

// counter adds the accounts the decoder queues to a Count, or seeds a
// Live with them, on a goroutine of its own. Its outcome equals adding
// them in order on the decoder's goroutine: the first error of Count.Add
// (Live.Seed) stops the counting, and it wins over any error the decoder
// meets later in the stream (finish).
type counter struct {
	c      *tally.Count
	l      *tally.Live // when set, instead of c
	full   chan *batch
	free   chan *batch
	done   chan struct{}
	cur    *batch
	err    error       // the first error of Count.Add; read after done
	failed atomic.Bool // err is set: the decoder may stop early
}

func startCounter(c *tally.Count, l *tally.Live) *counter {
	k := &counter{c: c, l: l, full: make(chan *batch, batches), free: make(chan *batch, batches), done: make(chan struct{})}
	for range batches - 1 {
		k.free <- k.newBatch()
	}
	k.cur = k.newBatch()
	go k.run()
	return k
}

// newBatch is a batch, with room for the accounts' addresses when they
// seed a Live (128 KiB a batch that counting alone does without).
func (k *counter) newBatch() *batch {
	b := new(batch)
	if k.l != nil {
		b.accounts = new([batchLen]tally.Owner)
	}
	return b
}

func (k *counter) run() {
	defer close(k.done)
	for b := range k.full {
		for i := 0; i < b.n && k.err == nil; i++ {
			var err error
			if k.l != nil {
				err = k.l.Seed(&b.accounts[i], &b.owners[i], b.amounts[i])
			} else {
				err = k.c.Add(&b.owners[i], b.amounts[i])
			}
			if err != nil {
				k.err = err
				k.failed.Store(true)
			}
		}
		b.n = 0
		k.free <- b
	}
}

// add queues one account (its address matters to a Live only). It
// returns an error once the counting has failed (then the decoder stops
// and calls finish, which returns it).
func (k *counter) add(account, owner *tally.Owner, amount uint64) error {
	b := k.cur
	b.owners[b.n], b.amounts[b.n] = *owner, amount
	if k.l != nil {
		b.accounts[b.n] = *account
	}
	b.n++
	if b.n < batchLen {
		return nil
	}
	if k.failed.Load() {
		return errCountFailed
	}
	k.full <- b
	k.cur = <-k.free
	// The batch back may be the one the counting failed on: stop before
	// filling it, so that a failure stops the decoder within the batches
	// already handed over, however late the counter ran.
	if k.failed.Load() {
		return errCountFailed
	}
	return nil
}

// errCountFailed stands for the counter's error until finish returns it.
var errCountFailed = errors.New("the count failed")

// finish counts what is queued, stops the goroutine, and returns the
// counting's error, or else decodeErr: an error of Count.Add happened at
// an account before the point where the decoder stopped.
func (k *counter) finish(decodeErr error) error {
	if k.cur.n > 0 && !k.failed.Load() {
		k.full <- k.cur
	}
	close(k.full)
	<-k.done
	if k.err != nil {
		return k.err
	}
	return decodeErr
}
