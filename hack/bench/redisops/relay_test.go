package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadCommand: a pipeline of RESP commands, as go-redis writes a
// transaction, is read command by command, arguments with CRLF included.
func TestReadCommand(t *testing.T) {
	stream := "*1\r\n$5\r\nMULTI\r\n" +
		"*5\r\n$3\r\nset\r\n$3\r\nk:1\r\n$6\r\na\r\nb\r\n\r\n$2\r\nEX\r\n$2\r\n60\r\n" +
		"*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$0\r\n\r\n" +
		"*1\r\n$4\r\nEXEC\r\n"
	br := bufio.NewReader(strings.NewReader(stream))
	var got []string
	for {
		name, err := readCommand(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, name)
	}
	if want := "MULTI SET PUBLISH EXEC"; strings.Join(got, " ") != want {
		t.Fatalf("commands %q, want %q", got, want)
	}
	for _, bad := range []string{"PING\r\n", "*x\r\n", "*1\r\n+OK\r\n", "*1\r\n$-1\r\n", "*1\r\n$9\r\nSHORT\r\n"} {
		if _, err := readCommand(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: read as a command", bad)
		}
	}
}
