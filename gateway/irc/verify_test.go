package irc

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestPendingAccounts: the registrations awaiting a code on a node are bounded (expired ones
// make room), a code matches once, and wrong codes end a registration after the limit.
func TestPendingAccounts(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	pending := func(name, code string, expires time.Time) *pendingAccount {
		return &pendingAccount{cmd: fsm.RegisterAccount{Name: name}, conn: "c-" + name, code: sha256.Sum256([]byte(code)), expires: expires}
	}
	var p pendingAccounts
	for i := range maxPendingAccounts {
		exp := now.Add(time.Hour)
		if i == 7 {
			exp = now.Add(time.Minute)
		}
		if !p.put(pending(fmt.Sprintf("a%d", i), "12345678", exp), now) {
			t.Fatalf("put %d refused", i)
		}
	}
	if p.put(pending("over", "12345678", now.Add(time.Hour)), now) {
		t.Fatal("a registration beyond the bound was kept")
	}
	if !p.put(pending("a3", "87654321", now.Add(time.Hour)), now) {
		t.Fatal("replacing a held name was refused at the bound")
	}
	later := now.Add(2 * time.Minute) // a7 has expired: room for one
	if !p.put(pending("over", "12345678", later.Add(time.Hour)), later) {
		t.Fatal("an expired registration made no room")
	}
	if !p.heldByOther("A1", "c-x", later) || p.heldByOther("a1", "c-a1", later) {
		t.Error("heldByOther")
	}

	for _, tc := range []struct {
		account, code string
		want          error
	}{
		{"a3", "12345678", errWrongCode}, // replaced: the old code is gone
		{"a3", "87654321", nil},
		{"a3", "87654321", errNoPending}, // used once
		{"nobody", "12345678", errNoPending},
		{"a5", "00000000", errWrongCode},
		{"a5", "00000001", errWrongCode},
		{"a5", "00000002", errTooManyAttempts},
		{"a5", "12345678", errNoPending},
	} {
		pa, err := p.take(tc.account, tc.code, 3, later)
		if !errors.Is(err, tc.want) || (err == nil) != (pa != nil) {
			t.Errorf("take(%s, %s) = %v, %v; want %v", tc.account, tc.code, pa, err, tc.want)
		}
	}
	if _, err := p.take("a1", "12345678", 3, now.Add(2*time.Hour)); !errors.Is(err, errNoPending) {
		t.Errorf("an expired code: %v", err)
	}
}

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		c, err := newCode()
		if err != nil || len(c) != codeDigits {
			t.Fatalf("newCode = %q, %v", c, err)
		}
		seen[c] = true
	}
	if len(seen) < 45 {
		t.Errorf("%d distinct codes of 50", len(seen))
	}
}
