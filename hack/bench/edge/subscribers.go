package main

// The subscribers of make bench-events: raw loopback connections that
// read /api/events as an EventSource does (chunked HTTP/1.1, fields,
// events dispatched at the blank line), each a goroutine with a 2 KiB
// and a 4 KiB buffer, so that 10,000 of them cost the bench process
// little more than the edge they measure. A `price` event whose
// price_usd is one of the changes' prices records its receive time.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fleet is n subscribers of one edge.
type fleet struct {
	addr string
	// epoch is the origin of every time the fleet records (monotonic).
	epoch time.Time
	// prices maps a change's price_usd to the change's index; read-only
	// once the fleet runs.
	prices map[float64]int
	// recv[k][i] is when subscriber i received change k, in ns since
	// epoch (0: not yet); got[k] counts the subscribers that did.
	recv [][]atomic.Int64
	got  []atomic.Int64
	// events counts every event dispatched; ready the subscribers that
	// have their first price event (the snapshot a new client gets).
	events atomic.Int64
	ready  atomic.Int64
	// ended counts streams that ended before the fleet closed them.
	ended   atomic.Int64
	closing atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newFleet(addr string, n int, prices []float64, epoch time.Time) *fleet {
	f := &fleet{addr: addr, epoch: epoch, prices: map[float64]int{}, recv: make([][]atomic.Int64, len(prices)),
		got: make([]atomic.Int64, len(prices)), conns: make([]net.Conn, 0, n)}
	for k, p := range prices {
		f.prices[p] = k
		f.recv[k] = make([]atomic.Int64, n)
	}
	return f
}

// connect opens n streams, at most `parallel` handshakes at once (the
// listener's accept queue is 4,096 at most), and returns once each has
// its first price event or one failed.
func (f *fleet) connect(n, parallel int, timeout time.Duration) error {
	sem := make(chan struct{}, parallel)
	errs := make(chan error, 1)
	for i := range n {
		sem <- struct{}{}
		select {
		case err := <-errs:
			return err
		default:
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			br, err := f.open(timeout)
			<-sem
			if err != nil {
				select {
				case errs <- fmt.Errorf("subscriber %d: %w", i, err):
				default:
				}
				return
			}
			f.read(i, br)
		}()
	}
	deadline := time.Now().Add(timeout)
	for f.ready.Load() < int64(n) {
		select {
		case err := <-errs:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d subscribers had their first events within %s", f.ready.Load(), n, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// open dials the edge, asks for the stream and reads the answer's head;
// it returns the body: chunked, or up to the close when the answer says
// Connection: close.
func (f *fleet) open(timeout time.Duration) (io.Reader, error) {
	c, err := net.DialTimeout("tcp", f.addr, timeout)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.closing.Load() {
		f.mu.Unlock()
		_ = c.Close()
		return nil, errors.New("fleet closing")
	}
	f.conns = append(f.conns, c)
	f.mu.Unlock()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, "GET /api/events HTTP/1.1\r\nHost: "+f.addr+"\r\nAccept: text/event-stream\r\nUser-Agent: bench-events\r\n\r\n"); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(c, 2048)
	status, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return nil, fmt.Errorf("answered %q", bytes.TrimSpace(status))
	}
	chunked, closes := false, false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		switch h := bytes.TrimSpace(line); {
		case bytes.EqualFold(h, []byte("Transfer-Encoding: chunked")):
			chunked = true
		case bytes.EqualFold(h, []byte("Connection: close")):
			closes = true
		}
	}
	_ = c.SetDeadline(time.Time{})
	switch {
	case chunked:
		return httputil.NewChunkedReader(br), nil
	case closes:
		return br, nil
	}
	return nil, errors.New("the stream is neither chunked nor ended by the close")
}

// read parses the stream's body until it ends.
func (f *fleet) read(i int, body io.Reader) {
	r := bufio.NewReaderSize(body, 4096)
	var (
		name     []byte
		nameBuf  [16]byte
		hasData  bool
		price    float64
		hasPrice bool
		first    = true
	)
	for {
		line, err := r.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !long {
			if !f.closing.Load() {
				f.ended.Add(1)
			}
			return
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			// dispatch
			if hasData {
				f.events.Add(1)
				if string(name) == "price" {
					if first {
						first = false
						f.ready.Add(1)
					}
					if k, ok := f.prices[price]; ok && hasPrice && f.recv[k][i].Load() == 0 {
						f.recv[k][i].Store(int64(time.Since(f.epoch)))
						f.got[k].Add(1)
					}
				}
			}
			name, hasData, hasPrice = nil, false, false
		case line[0] == ':': // comment: the heartbeat
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				name = append(nameBuf[:0], value...)
			case "data":
				hasData = true
				if p, ok := priceUSD(value); ok {
					price, hasPrice = p, true
				}
			}
		}
		// the rest of a line longer than the buffer (a market body):
		// nothing in it is needed
		for long {
			_, err = r.ReadSlice('\n')
			long = errors.Is(err, bufio.ErrBufferFull)
		}
	}
}

var priceField = []byte(`"price_usd":`)

// priceUSD is the price_usd of a JSON body's top level (it comes before
// any nested one in /api/price).
func priceUSD(body []byte) (float64, bool) {
	j := bytes.Index(body, priceField)
	if j < 0 {
		return 0, false
	}
	v := body[j+len(priceField):]
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return 0, false
	}
	p, err := strconv.ParseFloat(string(v[:end]), 64)
	return p, err == nil
}

// close ends every stream and waits for the readers.
func (f *fleet) close() {
	f.mu.Lock()
	f.closing.Store(true)
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
