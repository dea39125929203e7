package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/services/holders/wire"
)

// TestLongNodeMessageCutAtASpace: a node's message is bounded, and the cut
// never keeps the head of a word (which could be the head of a key).
func TestLongNodeMessageCutAtASpace(t *testing.T) {
	msg := strings.Repeat("word ", 58) + "K3yHeadThatCrossesTheCut tail"
	body := `{"jsonrpc":"2.0","error":{"code":-32052,"message":"` + msg + `"},"id":1}`
	_, err := wire.DecodeProgramAccounts(strings.NewReader(body), tally.NewCount(), nil)
	var re *wire.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(re.Message, "K3y") || !strings.HasSuffix(re.Message, "word…") || len(re.Message) > 300+len("…") {
		t.Errorf("message = %q", re.Message)
	}
}
