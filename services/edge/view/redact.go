package view

import (
	"regexp"
	"strings"

	"github.com/tokendata/tokendata/shared/config"
	"github.com/tokendata/tokendata/shared/contract"
)

// anyURL matches an absolute URL: an upstream's message echoed from a
// status record must never carry one, whether or not this process knows
// the secret (in a cluster only the collectors hold the RPC URLs).
var anyURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// maxEchoed bounds a message echoed from a status record.
const maxEchoed = 300

// redactor removes the process's secrets, and whatever looks like a
// credential, from text before it is logged or served.
type Redactor struct {
	// secrets masks every configured secret; public are the addresses the
	// credential filter spares (see dropCredentials).
	secrets *config.Redactor
	public  map[string]bool
}

func NewRedactor(c config.Common, token config.Token) Redactor {
	return Redactor{secrets: config.NewRedactor(config.SecretsOf(c)...), public: publicAddresses(token)}
}

// redact removes every configured secret, every URL and whatever looks
// like a credential from msg, and bounds its length.
func (r Redactor) Redact(msg string) string { return r.redactN(msg, maxEchoed) }

// redactN is redact with a bound of n bytes: a remedy is echoed whole (it
// is what the reader must do), within the status record's own bound.
func (r Redactor) redactN(msg string, n int) string {
	msg = r.secrets.Redact(msg)
	msg = anyURL.ReplaceAllString(msg, "[url]")
	msg = r.dropCredentials(msg)
	if len(msg) > n {
		msg = strings.ToValidUTF8(msg[:n], "") + "…"
	}
	return msg
}

// maxRemedy bounds an echoed remedy: the status record's bound of a
// message (512 bytes), with room for the ellipsis of a cut one.
const maxRemedy = 520

// The credential filter is the last line of defence of echoed messages. A
// status record is written by a collector that may hold secrets this edge
// does not know (in a cluster the edge has no RPC URL), so free text
// echoed from one (errors, remedies, notes, refusals) is also cleared of
// whatever is shaped like a credential, after the configured secrets and
// every plain URL are gone (see redact):
//   - a URL-encoded URL (https%3A%2F%2F…) becomes [url];
//   - the value of an Authorization header, of Bearer, and after a
//     credential's name and = or : (api-key=…, apikey: …, token=…,
//     key=…, secret, password, access_token, signature) becomes
//     [redacted], the name stays;
//   - user:password@ of an address without scheme becomes [redacted]@;
//   - the word after "api key", "token", "secret" or "password" when it
//     has 6 or more characters and a digit (a key; "token program" or
//     "API key required" are words of a sentence and stay);
//   - any run of 32 or more letters, digits, '-' and '_' that mixes
//     letters and digits (hex, base58, base64url and UUID keys).
//
// The last two spare the public addresses of the token: its mint, its
// official and listed pairs and the token programs, which messages quote
// as data. Documents are never filtered: only messages.
var (
	encodedURL  = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*%3a%2f%2f[^\s"'<>]*`)
	authHeader  = regexp.MustCompile(`(?i)\b(authorization"?\s*[:=]\s*"?)(?:(?:basic|bearer|token)\s+)?[^\s"'<>,;]+`)
	bearer      = regexp.MustCompile(`(?i)\b(bearer\s+)[^\s"'<>,;]+`)
	namedSecret = regexp.MustCompile(`(?i)\b((?:api[-_]?key|apikey|access[-_]?token|auth[-_]?token|token|key|secret|password|passwd|pwd|signature)(?:"?\s*[:=]\s*"?|%3d))[^\s&"',;<>()\[\]{}]+`)
	userPass    = regexp.MustCompile(`[^\s/:@"'<>()\[\]]+:[^\s/@"'<>()\[\]]+@`)
	saidSecret  = regexp.MustCompile("(?i)\\b((?:api[-_ ]?key|token|secret|password)\\s+[\"'`]?)([A-Za-z0-9._~+/=%-]{6,})")
	longRun     = regexp.MustCompile(`[A-Za-z0-9_-]{32,}`)
)

// publicAddresses are the addresses of token that messages may quote.
func publicAddresses(token config.Token) map[string]bool {
	out := map[string]bool{token.Mint: true, contract.ProgramIDToken: true, contract.ProgramIDToken2022: true}
	for _, p := range token.OfficialPairs {
		out[p.Address] = true
	}
	for _, e := range token.Exchanges {
		if e.Pair != "" {
			out[e.Pair] = true
		}
	}
	return out
}

// dropCredentials applies the credential filter to msg.
func (r Redactor) dropCredentials(msg string) string {
	msg = encodedURL.ReplaceAllString(msg, "[url]")
	msg = authHeader.ReplaceAllString(msg, "${1}"+config.Mask)
	msg = bearer.ReplaceAllString(msg, "${1}"+config.Mask)
	msg = namedSecret.ReplaceAllString(msg, "${1}"+config.Mask)
	msg = userPass.ReplaceAllString(msg, config.Mask+"@")
	msg = replaceGroup(saidSecret, msg, 2, func(w string) bool {
		return strings.ContainsAny(w, "0123456789") && !r.public[w]
	})
	return replaceGroup(longRun, msg, 0, func(w string) bool {
		return strings.ContainsAny(w, "0123456789") && strings.ContainsFunc(w, isLetter) && !r.public[w]
	})
}

// replaceGroup masks group g of each match of re for which mask is true.
func replaceGroup(re *regexp.Regexp, msg string, g int, mask func(string) bool) string {
	var b strings.Builder
	at := 0
	for _, m := range re.FindAllStringSubmatchIndex(msg, -1) {
		start, end := m[2*g], m[2*g+1]
		if start < 0 || !mask(msg[start:end]) {
			continue
		}
		b.WriteString(msg[at:start])
		b.WriteString(config.Mask)
		at = end
	}
	if at == 0 {
		return msg
	}
	b.WriteString(msg[at:])
	return b.String()
}

func isLetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
