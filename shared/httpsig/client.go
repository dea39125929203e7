package httpsig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxAnswer bounds the body of an answer read by Check.
const maxAnswer = 8 << 20

// Check fetches one answer of the service and verifies it, once per
// encoding: what a client does to prove a figure came from the service.
type Check struct {
	// URL is the answer to check (https://…/api/total-supply).
	URL string
	// KeysURL is the JWKS; the /api/keys beside URL when empty.
	KeysURL string
	// Thumbprint, when set, is the only key trusted: the one the token's
	// official identity states. Without it, any published key is.
	Thumbprint string
	// Encodings are asked for in turn (identity, gzip, br); identity
	// alone when empty.
	Encodings []string
	// Client makes the requests; one with a 15 s timeout when nil.
	Client *http.Client
	// Now is the verifier's clock (time.Now when nil).
	Now func() time.Time
}

// Outcome is the verdict on one encoding of the answer.
type Outcome struct {
	Encoding string
	// Served is the Content-Encoding the answer came with.
	Served string
	Status int
	Bytes  int
	Verified
	Err error
}

// KeysURLOf is the /api/keys of the service that serves u: the path up
// to its last "/api/" segment, so a service under a path prefix is found.
func KeysURLOf(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", u)
	}
	prefix := ""
	if i := strings.LastIndex(p.Path, "/api/"); i >= 0 {
		prefix = p.Path[:i]
	}
	k := url.URL{Scheme: p.Scheme, Host: p.Host, Path: prefix + "/api/keys"}
	return k.String(), nil
}

// Keys fetches and reads the published keys, narrowed to the pinned
// thumbprint when one is set.
func (c *Check) Keys(ctx context.Context) (KeySet, string, error) {
	keysURL := c.KeysURL
	if keysURL == "" {
		var err error
		if keysURL, err = KeysURLOf(c.URL); err != nil {
			return nil, "", err
		}
	}
	status, hdr, body, err := c.get(ctx, keysURL, "identity", maxJWKS)
	if err != nil {
		return nil, keysURL, fmt.Errorf("published keys: %w", err)
	}
	if status != http.StatusOK {
		return nil, keysURL, fmt.Errorf("published keys: %s answered %d", keysURL, status)
	}
	if ce := hdr.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return nil, keysURL, fmt.Errorf("published keys: %s answered in %s though identity was asked", keysURL, ce)
	}
	keys, err := ParseJWKS(body)
	if err != nil {
		return nil, keysURL, fmt.Errorf("published keys at %s: %w", keysURL, err)
	}
	if c.Thumbprint != "" {
		if keys, err = keys.Only(c.Thumbprint); err != nil {
			return nil, keysURL, fmt.Errorf("%w (at %s)", err, keysURL)
		}
	}
	return keys, keysURL, nil
}

// Answer fetches the answer in one encoding and verifies it against keys.
func (c *Check) Answer(ctx context.Context, keys KeySet, encoding string) Outcome {
	o := Outcome{Encoding: encoding}
	status, hdr, body, err := c.get(ctx, c.URL, encoding, maxAnswer)
	if err != nil {
		o.Err = err
		return o
	}
	o.Status, o.Bytes = status, len(body)
	o.Served = hdr.Get("Content-Encoding")
	if o.Served == "" {
		o.Served = "identity"
	}
	v := Verifier{Keys: keys, Now: c.Now}
	o.Verified, o.Err = v.VerifyResponse(status, hdr, body)
	return o
}

// get fetches u with Accept-Encoding set, so that the transport hands
// back the bytes as sent (it decodes only what it asked for itself), and
// returns the status, the header fields and the body.
func (c *Check) get(ctx context.Context, u, encoding string, limit int64) (int, http.Header, []byte, error) {
	client := c.Client
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return 0, nil, nil, fmt.Errorf("%s: body larger than %d bytes", u, limit)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// Run checks every encoding and writes a report to w: the keys trusted,
// one line per encoding with what verified or why it did not. The error
// is non-nil when any encoding failed.
func (c *Check) Run(ctx context.Context, w io.Writer) error {
	keys, keysURL, err := c.Keys(ctx)
	if err != nil {
		_, _ = fmt.Fprintf(w, "keys      FAIL %v\n", err)
		return err
	}
	trust := "every published key"
	if c.Thumbprint != "" {
		trust = "only the pinned thumbprint " + c.Thumbprint
	}
	_, _ = fmt.Fprintf(w, "keys      %s: %d Ed25519 key(s) published, trusting %s\n", keysURL, len(keys), trust)
	encs := c.Encodings
	if len(encs) == 0 {
		encs = []string{"identity"}
	}
	failed := 0
	for _, enc := range encs {
		o := c.Answer(ctx, keys, enc)
		if o.Err != nil {
			failed++
			_, _ = fmt.Fprintf(w, "%-9s FAIL %v\n", enc, o.Err)
			continue
		}
		_, _ = fmt.Fprintf(w, "%-9s ok   status %d, %d bytes (%s), signed by key %s at %s, covering %s; the body matches %s\n",
			enc, o.Status, o.Bytes, o.Served, o.KeyID, o.Created.UTC().Format(time.RFC3339), quoteAll(o.Components), o.Digest)
	}
	if failed > 0 {
		_, _ = fmt.Fprintf(w, "NOT VERIFIED: %d of %d encoding(s) failed\n", failed, len(encs))
		return errVerify
	}
	_, _ = fmt.Fprintf(w, "VERIFIED: %s\n", c.URL)
	return nil
}

// errVerify is Run's error once its report has said why.
var errVerify = errors.New("verification failed")

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return strings.Join(q, " ")
}
