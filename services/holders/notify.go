package holders

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/shared/pubsub"
)

// Change is one programNotification of a token account: its whole state
// after a slot, the part the holder count needs.
type Change struct {
	// Subscription is the subscription id the node gave.
	Subscription uint64
	// Slot is the notification's context slot.
	Slot uint64
	// Account is the token account's address, Owner its owner (the
	// holder), Amount its balance in base units.
	Account, Owner Owner
	Amount         uint64
}

// tokenAccountLen is a token account's length; a Token-2022 account with
// extensions is longer, its byte at tokenAccountLen the account type.
const tokenAccountLen = 165

// accountTypeAccount is Token-2022's AccountType::Account.
const accountTypeAccount = 2

// DecodeProgramNotification reads a programNotification of a base64
// subscription to the token program (the supply's encoding is not the
// holders'), for mint's accounts: a message that is not one, or whose
// account is not a token account of mint owned by program, is an error,
// never a change, since the count then no longer follows the ledger.
// Notifications are small (one account each): encoding/json is enough at
// thousands a second.
func DecodeProgramNotification(msg []byte, mint *Owner, program string) (Change, error) {
	var m pubsub.Notification
	if err := json.Unmarshal(msg, &m); err != nil {
		return Change{}, fmt.Errorf("programNotification: %w", err)
	}
	if m.Method != "programNotification" {
		return Change{}, fmt.Errorf("a %q message where a programNotification was expected", clip(m.Method))
	}
	var v struct {
		Pubkey  string `json:"pubkey"`
		Account struct {
			Data  []string `json:"data"`
			Owner string   `json:"owner"`
		} `json:"account"`
	}
	if err := json.Unmarshal(m.Params.Result.Value, &v); err != nil {
		return Change{}, fmt.Errorf("programNotification: value: %w", err)
	}
	acc := &v.Account
	ch := Change{Subscription: m.Params.Subscription, Slot: m.Params.Result.Context.Slot}
	if acc.Owner != program {
		return Change{}, fmt.Errorf("programNotification: an account of program %q, want %s", clip(acc.Owner), program)
	}
	if len(acc.Data) != 2 || acc.Data[1] != "base64" {
		return Change{}, fmt.Errorf("programNotification: account data not [\"…\",\"base64\"]")
	}
	if err := decodeAddress(v.Pubkey, &ch.Account); err != nil {
		return Change{}, fmt.Errorf("programNotification: pubkey: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(acc.Data[0])
	if err != nil {
		return Change{}, fmt.Errorf("programNotification: account data is not base64")
	}
	switch {
	case len(data) < tokenAccountLen:
		return Change{}, fmt.Errorf("programNotification: %d bytes of account data, a token account has %d", len(data), tokenAccountLen)
	case len(data) > tokenAccountLen && data[tokenAccountLen] != accountTypeAccount:
		return Change{}, fmt.Errorf("programNotification: %d bytes of account data, not a token account (account type %d)", len(data), data[tokenAccountLen])
	case [32]byte(data[:32]) != *mint:
		return Change{}, fmt.Errorf("programNotification: an account of mint %s", base58.Encode(data[:32]))
	}
	ch.Owner = Owner(data[32:64])
	ch.Amount = binary.LittleEndian.Uint64(data[64:72])
	return ch, nil
}

// clip bounds a string read from the wire before it is quoted.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
