package collector

// One classification of upstream failures, shared by every collector (and
// by the check subcommand, which prints the same texts): the kind of a
// failure decides whether it is tried again and which remedy the status
// record, the log and the check report give. A failure a collector can
// name more precisely (a mint that does not exist, a node that cannot
// enumerate) carries its own remedy; any other gets the remedy of its
// kind (RemedyFor), which names the variable of the endpoint at fault.
// A permanent failure (Retry false) never says that waiting helps.

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// RemedyFor is the remedy of a kind of failure of the endpoint configured
// in variable ("SOLANA_RPC_URL"), or "" for the kinds whose remedy only
// the failure itself can say (config_error, enumeration_unsupported,
// enumeration_too_large, internal).
func RemedyFor(kind, variable string) string {
	switch kind {
	case contract.ErrKindUnavailable:
		return "check that the endpoint of " + variable + " is up and reachable from this process (DNS, firewall, proxy), " +
			"or point " + variable + " at another one; the collector tries again on its next poll"
	case contract.ErrKindRateLimited:
		return "the endpoint of " + variable + " limits this service's requests: use a key or plan with a higher limit, " +
			"or poll less often (the domain's _REFRESH variable)"
	case contract.ErrKindForbidden:
		return "check the API key or plan of the " + variable + " endpoint"
	case contract.ErrKindNodeBehind:
		return "wait for the node to catch up, or point " + variable + " at a healthy node"
	case contract.ErrKindInvalid:
		return "the endpoint of " + variable + " answered what this service cannot trust; if it happens again, point " +
			variable + " at another endpoint"
	case contract.ErrKindRPC:
		return "if the node answers this again, point " + variable + " at another node"
	case contract.ErrKindStore:
		return "check REDIS_URL and that Redis accepts writes (memory limit, persistence errors)"
	}
	return ""
}

// WithRemedy sets the remedy of its kind on e when e has none, and
// returns e.
func (e *Error) WithRemedy(variable string) *Error {
	if e != nil && e.Remedy == "" {
		e.Remedy = RemedyFor(e.Kind, variable)
	}
	return e
}

// RemedyMint is the remedy of a mint address that the ledger does not
// know as a mint.
func RemedyMint(variable string) string {
	return "check the mint address (TOKEN_MINT, or mint in the token file): it must be the token's mint, " +
		"and " + variable + " must serve the token's cluster (mainnet-beta)"
}

// MintNotFound is the failure of a mint account that does not exist on
// the ledger of the node of variable: a configuration error, the same in
// every collector.
func MintNotFound(method, mint, variable string) *Error {
	return &Error{Kind: contract.ErrKindConfig,
		Message: fmt.Sprintf("%s: the mint account %s does not exist on the ledger of the node of %s", method, mint, variable),
		Remedy:  RemedyMint(variable)}
}

// NotAMint is the failure of a mint address whose account is not a mint
// of the Token or Token-2022 program (a wallet, a token account, a pool).
func NotAMint(method, mint, owner, variable string) *Error {
	return &Error{Kind: contract.ErrKindConfig,
		Message: fmt.Sprintf("%s: the account %s is owned by %.44s, not by the Token or Token-2022 program: it is not a mint", method, mint, owner),
		Remedy:  RemedyMint(variable)}
}

// Host is the host (and port) of endpoint, for messages: the labels of it
// that look like a key are masked, as config.Redact masks them.
func Host(endpoint config.Secret) string {
	u, err := url.Parse(endpoint.Reveal())
	if err != nil || u.Host == "" {
		return "?"
	}
	return config.Redact(u.Host, endpoint)
}

// Unreachable is the failure of a request that got no answer: the
// connection failed, or no answer came within timeout (timeoutVar names
// its variable). It names the variable of the endpoint and its host,
// never the rest of the URL, and says why when the error tells (the
// host does not resolve, the connection was refused, the certificate was
// not accepted). It is tried again.
func Unreachable(method, variable string, endpoint config.Secret, err error, timedOut bool, timeout time.Duration, timeoutVar string) *Error {
	host := Host(endpoint)
	if timedOut {
		return &Error{Kind: contract.ErrKindUnavailable, Retry: true,
			Message: fmt.Sprintf("%s: the endpoint of %s (host %s) did not answer within %s (%s)", method, variable, host, timeout, timeoutVar),
			Remedy: "check that the endpoint of " + variable + " (host " + host + ") is healthy and not overloaded, or raise " +
				timeoutVar + "; the collector tries again on its next poll"}
	}
	return &Error{Kind: contract.ErrKindUnavailable, Retry: true,
		Message: fmt.Sprintf("%s: no connection to the endpoint of %s (host %s): %s", method, variable, host, netReason(err)),
		Remedy: "check that " + host + " is reachable from this process (DNS, firewall, proxy) and that " + variable +
			" is the endpoint you mean; the collector tries again on its next poll"}
}

// netReason says why a connection failed, in words that quote nothing of
// the error (net/http's errors carry the whole URL).
func netReason(err error) string {
	var (
		dns  *net.DNSError
		cert x509.UnknownAuthorityError
		host x509.HostnameError
		inv  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &cert), errors.As(err, &host), errors.As(err, &inv):
		return "its TLS certificate was not accepted"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "it speaks http, not https"
	}
	return "the connection failed"
}

// ClassifyRPC maps a JSON-RPC error object of a node to an *Error. The
// node's message is kept, shortened (it says what the operator must
// fix); the caller redacts it. variable names the endpoint in the
// remedies. A collector refines what only it can name (a mint that does
// not exist, a method that cannot enumerate).
func ClassifyRPC(method string, code int64, msg, variable string) *Error {
	if len(msg) > 160 {
		msg = strings.ToValidUTF8(msg[:160], "") + "…"
	}
	text := fmt.Sprintf("%s: the RPC node answered error %d: %s", method, code, msg)
	e := &Error{Kind: contract.ErrKindRPC, Message: text}
	switch code {
	case -32005: // node unhealthy, behind
		e.Kind, e.Retry = contract.ErrKindNodeBehind, true
	case 429:
		e.Kind, e.Retry = contract.ErrKindRateLimited, true
	case 401, 403:
		e.Kind = contract.ErrKindForbidden
	case -32601: // method not found
		e.Remedy = "point " + variable + " at a node that serves " + method
	case -32602: // invalid params: of a mint, the node does not know it as one
		if strings.Contains(msg, "could not find account") || strings.Contains(msg, "not a Token mint") {
			e.Kind, e.Remedy = contract.ErrKindConfig, RemedyMint(variable)
		}
	case -32603, -32004, -32014, -32016:
		// Internal error, block not available, status not available,
		// minimum context slot not reached: transient on a healthy node.
		e.Retry = true
	}
	return e.WithRemedy(variable)
}
