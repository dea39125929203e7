package solanasim

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkProgramAccounts1M streams getProgramAccounts of a 1,000,000-account
// mint (holders query: dataSize 165, mint memcmp, dataSlice 32/40) over real
// HTTP and reports the peak heap seen while streaming; the client discards
// the body, so the heap is the simulator's.
func BenchmarkProgramAccounts1M(b *testing.B) {
	for _, gz := range []bool{false, true} {
		name := "identity"
		if gz {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			s := New()
			if err := s.AddToken(classicToken(1_000_000)); err != nil {
				b.Fatal(err)
			}
			url, err := s.Start(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			body := `{"jsonrpc":"2.0","id":1,"method":"getProgramAccounts","params":["` + TokenProgramID +
				`",{"encoding":"base64","dataSlice":{"offset":32,"length":40},"filters":[{"dataSize":165},{"memcmp":{"offset":0,"bytes":"` + classicMint + `"}}]}]}`
			tr := &http.Transport{DisableCompression: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}

			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			var peak atomic.Uint64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ms runtime.MemStats
				t := time.NewTicker(20 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						runtime.ReadMemStats(&ms)
						if ms.HeapAlloc > peak.Load() {
							peak.Store(ms.HeapAlloc)
						}
					}
				}
			}()
			var n int64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				if gz {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(n)/1e6, "MB-body")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(base.HeapAlloc)/(1<<20), "base-heap-MiB")
		})
	}
}

// BenchmarkHolderChange1M is one holder change of a 1,000,000-account
// mint as make bench-holders' live stream makes them: a new holder, or
// the last one selling out again.
func BenchmarkHolderChange1M(b *testing.B) {
	s := New()
	if err := s.AddToken(classicToken(1_000_000)); err != nil {
		b.Fatal(err)
	}
	// The first change builds the index of addresses.
	ch, err := s.OpenHolder(classicMint, 5)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			_, err = s.SetHolderBalance(classicMint, ch.Accounts[0].Address, 0)
		} else {
			ch, err = s.OpenHolder(classicMint, 5)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
