package edge

import (
	"regexp"
	"strings"

	"github.com/tokendata/tokendata/shared/config"
)

// anyURL matches an absolute URL: an upstream's message echoed from a
// status record must never carry one, whether or not this process knows
// the secret (in a cluster only the collectors hold the RPC URLs).
var anyURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// maxEchoed bounds a message echoed from a status record.
const maxEchoed = 300

// redactor removes the process's secrets from text before it is logged
// or served.
type redactor struct {
	secrets []config.Secret
}

func newRedactor(c config.Common) redactor {
	return redactor{secrets: []config.Secret{c.SolanaRPCURL, c.HoldersRPC(), c.RedisURL}}
}

// redact removes every configured secret and every URL from msg, and
// bounds its length.
func (r redactor) redact(msg string) string {
	msg = config.Redact(msg, r.secrets...)
	msg = anyURL.ReplaceAllString(msg, "[url]")
	if len(msg) > maxEchoed {
		msg = strings.ToValidUTF8(msg[:maxEchoed], "") + "…"
	}
	return msg
}
