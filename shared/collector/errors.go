package collector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// What a failed poll is (Error, Classify) and how every text the runner
// records or logs is made safe and bounded (Clip, Runner.text,
// Runner.clean).

// Error is a classified poll failure. Message and Remedy must not carry
// secrets (URLs, keys); the Runner redacts them once more, with every
// configured secret, before they are recorded or logged.
type Error struct {
	// Kind is one of contract.ErrKind*.
	Kind string
	// Message says what failed.
	Message string
	// Remedy says what an operator can do, when known.
	Remedy string
	// Retry is true when trying again within the same poll may help.
	Retry bool
	// RetryAfter, when set, is the upstream's requested wait.
	RetryAfter time.Duration
	// Ledger, when set, is the failed poll's cross-check of the ledger
	// nodes, kept in the status record's run.
	Ledger *contract.LedgerCrossCheck
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Errorf returns a classified error.
func Errorf(kind string, retry bool, format string, a ...any) *Error {
	return &Error{Kind: kind, Retry: retry, Message: fmt.Sprintf(format, a...)}
}

// Classify turns any error into an *Error: an *Error stays as it is;
// timeouts and network errors are retryable unavailability; the rest is
// internal. Messages of unclassified errors are replaced by a generic one,
// since they may quote a URL.
func Classify(err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Kind: contract.ErrKindUnavailable, Message: "upstream timed out", Retry: true}
	case errors.As(err, &ne):
		return &Error{Kind: contract.ErrKindUnavailable, Message: "upstream connection failed", Retry: true}
	}
	return &Error{Kind: contract.ErrKindInternal, Message: "unexpected error (see the collector's log)"}
}

// MaxMessage bounds a message of the status record or of a log line, once
// redacted (a cut made before would leave a piece of a secret
// unrecognised).
const MaxMessage = 512

// Clip bounds msg to MaxMessage bytes, cut at a UTF-8 boundary and marked
// with "…". Redact first.
func Clip(msg string) string {
	if len(msg) > MaxMessage {
		msg = strings.ToValidUTF8(msg[:MaxMessage], "") + "…"
	}
	return msg
}

// text redacts msg, then bounds it.
func (r *Runner) text(msg string) string { return Clip(r.Redactor.Redact(msg)) }

// clean returns a copy of e whose texts carry no secret.
func (r *Runner) clean(e *Error) *Error {
	out := *e
	out.Message, out.Remedy = r.text(e.Message), r.text(e.Remedy)
	return &out
}
