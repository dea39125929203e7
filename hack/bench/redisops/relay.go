package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// relay forwards one process's connections to Redis unchanged and counts
// the commands they send (RESP arrays, by upper-cased name; MULTI, EXEC
// and each command of a pipeline count one each) and the bytes each way.
type relay struct {
	name, addr string
	pid        int

	mu       sync.Mutex
	commands map[string]int64
	up, down int64
}

func newRelay(name, redisAddr string) (*relay, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{name: name, addr: l.Addr().String(), commands: map[string]int64{}}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go r.serve(c, redisAddr)
		}
	}()
	return r, nil
}

func (r *relay) snapshot() counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := counts{commands: make(map[string]int64, len(r.commands)), up: r.up, down: r.down}
	for k, v := range r.commands {
		c.commands[k] = v
	}
	return c
}

func (r *relay) serve(client net.Conn, redisAddr string) {
	defer func() { _ = client.Close() }()
	server, err := net.Dial("tcp", redisAddr)
	if err != nil {
		return
	}
	defer func() { _ = server.Close() }()
	go func() {
		_, _ = io.Copy(&countingWriter{w: client, n: func(n int) {
			r.mu.Lock()
			r.down += int64(n)
			r.mu.Unlock()
		}}, server)
		_ = client.Close()
	}()
	// Every byte read from the client goes to Redis as it is read; the
	// parser only looks at it.
	br := bufio.NewReader(io.TeeReader(&countingReader{r: client, n: func(n int) {
		r.mu.Lock()
		r.up += int64(n)
		r.mu.Unlock()
	}}, server))
	for {
		name, err := readCommand(br)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.commands[name]++
		r.mu.Unlock()
	}
}

type countingReader struct {
	r io.Reader
	n func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n(n)
	return n, err
}

type countingWriter struct {
	w io.Writer
	n func(int)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n(n)
	return n, err
}

// readCommand reads one RESP command (an array of bulk strings) and
// returns its name upper-cased.
func readCommand(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "*") {
		return "", fmt.Errorf("not a RESP array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return "", fmt.Errorf("RESP array length %q", line)
	}
	var name string
	for i := range n {
		head, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(head, "$") {
			return "", fmt.Errorf("not a bulk string: %q", head)
		}
		size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
		if err != nil || size < 0 {
			return "", fmt.Errorf("bulk length %q", head)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		if i == 0 {
			name = strings.ToUpper(string(buf[:size]))
		}
	}
	return name, nil
}
