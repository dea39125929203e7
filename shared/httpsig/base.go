package httpsig

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Message gives the value of a covered component (RFC 9421 section 2):
// a derived component ("@status", "@method"...) or a field name, in
// lower case. A component the message does not have is an error that
// wraps ErrMissingComponent.
type Message interface {
	Component(name string) (string, error)
}

// Response is a response message: its status and header fields.
type Response struct {
	Status int
	Header http.Header
}

// Component implements Message: "@status" and header fields.
func (r Response) Component(name string) (string, error) {
	if name == "@status" {
		if r.Status < 100 || r.Status > 999 {
			return "", fmt.Errorf("%w: status %d is not three digits", ErrMalformed, r.Status)
		}
		return strconv.Itoa(r.Status), nil
	}
	if strings.HasPrefix(name, "@") {
		return "", fmt.Errorf("%w: %q is not a derived component of a response", ErrMissingComponent, name)
	}
	return fieldValue(r.Header, name)
}

// Request is a request message, for the request-side derived components
// "@method", "@authority", "@scheme", "@path", "@query" and header fields.
type Request struct{ R *http.Request }

// Component implements Message.
func (q Request) Component(name string) (string, error) {
	r := q.R
	switch name {
	case "@method":
		return r.Method, nil
	case "@authority":
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		return strings.ToLower(host), nil
	case "@scheme":
		if r.URL.Scheme != "" {
			return strings.ToLower(r.URL.Scheme), nil
		}
		if r.TLS != nil {
			return "https", nil
		}
		return "http", nil
	case "@path":
		if p := r.URL.EscapedPath(); p != "" {
			return p, nil
		}
		return "/", nil
	case "@query":
		return "?" + r.URL.RawQuery, nil
	}
	if strings.HasPrefix(name, "@") {
		return "", fmt.Errorf("%w: derived component %q is not supported", ErrMissingComponent, name)
	}
	return fieldValue(r.Header, name)
}

// fieldValue is a header field's component value (RFC 9421 section 2.1):
// each field line trimmed, joined with ", ".
func fieldValue(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", fmt.Errorf("%w: the %s field is absent", ErrMissingComponent, name)
	case 1:
		return strings.TrimSpace(vs[0]), nil
	}
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimSpace(v))
	}
	return b.String(), nil
}

// Params are the signature parameters (RFC 9421 section 2.3) used here.
// Zero fields are left out.
type Params struct {
	Created int64
	Expires int64
	KeyID   string
	Alg     string
	Tag     string
}

// checkComponents refuses names that cannot be covered as written.
func checkComponents(components []string) error {
	seen := make(map[string]bool, len(components))
	for _, c := range components {
		if c == "" || c != strings.ToLower(c) || strings.ContainsAny(c, " \t\"\\") {
			return fmt.Errorf("component %q: must be a lower-case field name or a derived component", c)
		}
		if seen[c] {
			return fmt.Errorf("component %q is listed twice", c)
		}
		seen[c] = true
	}
	return nil
}

// SignatureParams is the serialized "@signature-params" value: the inner
// list of the covered components with the parameters, per RFC 8941.
func SignatureParams(components []string, p Params) (string, error) {
	if err := checkComponents(components); err != nil {
		return "", err
	}
	il := httpsfv.InnerList{Items: make([]httpsfv.Item, len(components)), Params: httpsfv.NewParams()}
	for i, c := range components {
		il.Items[i] = httpsfv.NewItem(c)
	}
	if p.Created != 0 {
		il.Params.Add("created", p.Created)
	}
	if p.Expires != 0 {
		il.Params.Add("expires", p.Expires)
	}
	if p.KeyID != "" {
		il.Params.Add("keyid", p.KeyID)
	}
	if p.Alg != "" {
		il.Params.Add("alg", p.Alg)
	}
	if p.Tag != "" {
		il.Params.Add("tag", p.Tag)
	}
	return httpsfv.Marshal(httpsfv.List{il})
}

// AppendBase appends the signature base (RFC 9421 section 2.5) of msg
// over components to dst: one `"name": value` line per component, then
// the "@signature-params" line with sigParams, no final newline.
func AppendBase(dst []byte, components []string, sigParams string, msg Message) ([]byte, error) {
	for _, c := range components {
		v, err := msg.Component(c)
		if err != nil {
			return dst, err
		}
		if strings.ContainsAny(v, "\r\n") {
			return dst, fmt.Errorf("%w: the value of %s spans lines", ErrMalformed, c)
		}
		dst = append(dst, '"')
		dst = append(dst, c...)
		dst = append(dst, `": `...)
		dst = append(dst, v...)
		dst = append(dst, '\n')
	}
	dst = append(dst, `"@signature-params": `...)
	dst = append(dst, sigParams...)
	return dst, nil
}
