package wire

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/mr-tron/base58"

	"github.com/tokendata/tokendata/services/holders/tally"
	"github.com/tokendata/tokendata/shared/contract"
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
	Account, Owner tally.Owner
	Amount         uint64
}

// tokenAccountLen is a token account's length; a Token-2022 account with
// extensions is longer, its byte at tokenAccountLen the account type.
const tokenAccountLen = 165

// accountTypeAccount is Token-2022's AccountType::Account.
const accountTypeAccount = 2

// The subscription asks for the part of the account the count reads
// (dataSlice, honoured by a node's programSubscribe as by
// getProgramAccounts): the classic program's accounts, filtered by size,
// from the owner to the amount (40 bytes, not 165); Token-2022's, filtered
// by the mint alone, from the owner to the account-type byte at offset 165
// (134 bytes, 133 for an account of 165 without extensions), so that an
// account that is not a token account is still told apart. A node that
// ignores the slice sends the whole account, which is read as well.
const notifySliceLen2022 = tokenAccountLen + 1 - sliceOffset

// ProgramSubscribeParams are the params of the collector's programSubscribe
// to program's accounts of mint, at commitment: base64, the dataSlice
// above, and the enumeration's filters (Token-2022's accounts by the mint
// alone: a subscription takes one filter set).
func ProgramSubscribeParams(program, mint, commitment string) []any {
	filters := []any{memcmpFilter{memcmp{Offset: 0, Bytes: mint}}}
	slice := dataSlice{sliceOffset, notifySliceLen2022}
	if program == contract.ProgramIDToken {
		filters = append([]any{dataSizeFilter{tokenAccountLen}}, filters...)
		slice = dataSlice{sliceOffset, sliceLen}
	}
	return []any{program, map[string]any{"encoding": "base64", "commitment": commitment, "dataSlice": slice, "filters": filters}}
}

// notification is the envelope of a PubSub notification, the shape
// shared/pubsub.Notification reads (repeated here: this package links no
// socket); Value is the subscription's own, a program's keyed account.
type notification struct {
	Method string `json:"method"`
	Params struct {
		Result struct {
			Context struct {
				Slot uint64 `json:"slot"`
			} `json:"context"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Subscription uint64 `json:"subscription"`
	} `json:"params"`
}

// DecodeProgramNotification reads a programNotification of a base64
// subscription to the token program (the supply's encoding is not the
// holders'), for mint's accounts, sliced as ProgramSubscribeParams asks
// or whole: a message that is not one, or whose account is not a token
// account of mint owned by program, is an error, never a change, since the
// count then no longer follows the ledger. (A sliced account does not
// carry its mint: the subscription's filter is the node's word for it, as
// for the enumeration's sliced accounts.) Notifications are small (one
// account each): encoding/json is enough at thousands a second.
func DecodeProgramNotification(msg []byte, mint *tally.Owner, program string) (Change, error) {
	var m notification
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
	if err := DecodeAddress(v.Pubkey, &ch.Account); err != nil {
		return Change{}, fmt.Errorf("programNotification: pubkey: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(acc.Data[0])
	if err != nil {
		return Change{}, fmt.Errorf("programNotification: account data is not base64")
	}
	// part is the account from the owner on.
	var part []byte
	classic := program == contract.ProgramIDToken
	switch n := len(data); {
	case n >= tokenAccountLen: // whole
		if n > tokenAccountLen && data[tokenAccountLen] != accountTypeAccount {
			return Change{}, fmt.Errorf("programNotification: %d bytes of account data, not a token account (account type %d)", n, data[tokenAccountLen])
		}
		if [32]byte(data[:32]) != *mint {
			return Change{}, fmt.Errorf("programNotification: an account of mint %s", base58.Encode(data[:32]))
		}
		part = data[sliceOffset:]
	case classic && n == sliceLen,
		!classic && n == notifySliceLen2022-1:
		part = data
	case !classic && n == notifySliceLen2022:
		if t := data[n-1]; t != accountTypeAccount {
			return Change{}, fmt.Errorf("programNotification: not a token account (account type %d)", t)
		}
		part = data
	default:
		return Change{}, fmt.Errorf("programNotification: %d bytes of account data, neither a token account (%d) nor the slice asked for", n, tokenAccountLen)
	}
	ch.Owner = tally.Owner(part[:32])
	ch.Amount = binary.LittleEndian.Uint64(part[32:40])
	return ch, nil
}

// clip bounds a string read from the wire before it is quoted.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
