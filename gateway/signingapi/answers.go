package signingapi

import (
	"bytes"
	"sync"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// maxCachedAnswers bounds the verify answers kept; the cache starts over when it is full.
const maxCachedAnswers = 1 << 16

// answerCache keeps the encoded answers of GET /api/v1/verify/{msgid} (B7: a popular message is
// verified again and again). An answer is a function of the stored row, which never changes
// under its msgid (an edit is a row of its own, a delete only marks the row, and rows are never
// removed), and of the key the signature names, which can be registered, retired or replaced at
// any time. So every request still reads who may see the channel and looks the key up again, and
// the cached bytes are used only when that key is the one the answer was built with.
type answerCache struct {
	mu      sync.Mutex
	answers map[string]*verifyAnswer
}

// verifyAnswer is one encoded answer and what it was built from besides the row.
type verifyAnswer struct {
	venue string
	// incarnation and public: where in the channel's life the message was written, for the
	// history rule (fsm.Channel.MessageVisible).
	incarnation string
	public      bool
	// keyLookup is set when the verdict depended on a key: the one filed as kid for senderDID
	// (or a server key with that kid), found under keyDID (key is nil when none was found).
	keyLookup      bool
	senderDID, kid string
	keyDID         string
	key            *fsm.KeyRecord
	body           []byte
}

func (ac *answerCache) get(msgid string) *verifyAnswer {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	return ac.answers[msgid]
}

func (ac *answerCache) put(msgid string, a *verifyAnswer) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.answers == nil || len(ac.answers) >= maxCachedAnswers {
		ac.answers = make(map[string]*verifyAnswer)
	}
	ac.answers[msgid] = a
}

// stillHolds reports whether the key lookup gives what the answer was built with.
func (va *verifyAnswer) stillHolds(key *fsm.KeyRecord, keyDID string) bool {
	if !va.keyLookup {
		return true
	}
	if key == nil || va.key == nil {
		return key == nil && va.key == nil
	}
	return keyDID == va.keyDID && sameKey(key, va.key)
}

func sameKey(a, b *fsm.KeyRecord) bool {
	return a.KID == b.KID && bytes.Equal(a.PublicKey, b.PublicKey) && a.Source == b.Source && a.Purpose == b.Purpose &&
		a.RegisteredAt == b.RegisteredAt && a.LastSeenAt == b.LastSeenAt && a.RemovedAt == b.RemovedAt && a.ExpiresAt == b.ExpiresAt
}
