package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/keyresolver"
)

// step is one AUTHENTICATE line of a scenario. param builds the argument from
// the challenges issued so far (newest last).
type step struct {
	param func(t *testing.T, issued []Challenge) string
	at    time.Duration // offset from baseTime
	want  Result        // Outcome, Text, Counted, DID and Method are compared
}

func lit(s string) func(*testing.T, []Challenge) string {
	return func(*testing.T, []Challenge) string { return s }
}

func mech() step { return step{param: lit(Mechanism), want: Result{Outcome: OutcomeChallenge}} }

// answer signs the challenge issued idx-th from the end (0 = newest).
func answer(s signer, idx int) func(*testing.T, []Challenge) string {
	return func(t *testing.T, issued []Challenge) string {
		if len(issued) <= idx {
			t.Fatalf("no challenge #%d", idx)
		}
		return s.signedResponse(t, issued[len(issued)-1-idx])
	}
}

func success(s signer) Result { return Result{Outcome: OutcomeSuccess, DID: s.did, Method: "crypto"} }

var (
	failedCounted = Result{Outcome: OutcomeFailure, Text: TextFailed, Counted: true}
	badResponse   = Result{Outcome: OutcomeFailure, Text: TextBadResponse}
	unknownMech   = Result{Outcome: OutcomeUnknownMechanism, Text: TextUnsupported}
	cont          = Result{Outcome: OutcomeContinue}
)

func TestConversation(t *testing.T) {
	ed := ed25519Signer(t, 1)
	k1 := secp256k1Signer(t, 2)
	mallory := ed25519Signer(t, 3)
	// A did:key whose multikey does not decode: resolution fails.
	unresolvable := signer{did: "did:key:z6MkBroken", sign: ed.sign}
	denied := ed25519Signer(t, 4)

	withMethod := func(method string) func(*testing.T, []Challenge) string {
		return func(t *testing.T, issued []Challenge) string {
			ch := issued[len(issued)-1]
			return encodeResponse(t, map[string]any{
				"did": ed.did, "method": method, "challenge_nonce": ch.Nonce,
				"signature": base64.RawURLEncoding.EncodeToString(ed.sign(ch.JSON)),
			})
		}
	}
	membersFor := func(s signer, ch Challenge) map[string]any {
		return map[string]any{"did": s.did, "signature": base64.RawURLEncoding.EncodeToString(s.sign(ch.JSON))}
	}

	tests := []struct {
		name  string
		steps []step
	}{
		{"ed25519 did:key", []step{mech(), {param: answer(ed, 0), want: success(ed)}}},
		{"secp256k1 did:key", []step{mech(), {param: answer(k1, 0), want: success(k1)}}},
		{"method absent", []step{mech(), {param: func(t *testing.T, issued []Challenge) string {
			return encodeResponse(t, membersFor(ed, issued[0]))
		}, want: success(ed)}}},
		{"mechanism any case", []step{
			{param: lit("atproto-Challenge"), want: Result{Outcome: OutcomeChallenge}},
			{param: answer(ed, 0), want: success(ed)},
		}},
		{"wrong key", []step{mech(), {param: func(t *testing.T, issued []Challenge) string {
			ch := issued[0]
			return encodeResponse(t, map[string]any{"did": ed.did, "signature": base64.RawURLEncoding.EncodeToString(mallory.sign(ch.JSON))})
		}, want: failedCounted}}},
		{"unresolvable DID", []step{mech(), {param: answer(unresolvable, 0), want: failedCounted}}},
		{"not allowed", []step{mech(), {param: answer(denied, 0), want: Result{Outcome: OutcomeFailure, Text: TextNotAuthorized, Counted: true}}}},
		{"expired after 61 s", []step{mech(), {param: answer(ed, 0), at: 61 * time.Second, want: Result{Outcome: OutcomeFailure, Text: TextNoChallenge}}}},
		{"still valid at 60 s", []step{mech(), {param: answer(ed, 0), at: 60 * time.Second, want: success(ed)}}},
		{"issued in the future beyond the window", []step{
			{param: lit(Mechanism), at: 61 * time.Second, want: Result{Outcome: OutcomeChallenge}},
			{param: answer(ed, 0), want: Result{Outcome: OutcomeFailure, Text: TextNoChallenge}},
		}},
		{"replayed after success", []step{
			mech(), {param: answer(ed, 0), want: success(ed)},
			{param: answer(ed, 0), want: unknownMech},
		}},
		{"replayed after failure", []step{
			mech(), {param: answer(ed, 0), at: 61 * time.Second, want: Result{Outcome: OutcomeFailure, Text: TextNoChallenge}},
			{param: answer(ed, 0), want: unknownMech},
		}},
		{"second challenge replaces the first", []step{
			mech(), mech(),
			{param: answer(ed, 1), want: failedCounted},
			mech(), mech(),
			{param: answer(ed, 0), want: success(ed)},
		}},
		{"re-authentication after success", []step{
			mech(), {param: answer(ed, 0), want: success(ed)},
			mech(), {param: answer(k1, 0), want: success(k1)},
		}},
		{"three counted failures", []step{
			mech(), {param: answer(unresolvable, 0), want: failedCounted},
			mech(), {param: lit("!!"), want: badResponse},
			mech(), {param: answer(unresolvable, 0), want: failedCounted},
			mech(), {param: answer(unresolvable, 0), want: Result{Outcome: OutcomeTooManyFailures, Text: TextFailed, Counted: true}},
			{param: lit(Mechanism), want: Result{Outcome: OutcomeIgnored}},
			{param: lit("*"), want: Result{Outcome: OutcomeIgnored}},
		}},
		{"third failure not allowed", []step{
			mech(), {param: answer(denied, 0), want: Result{Outcome: OutcomeFailure, Text: TextNotAuthorized, Counted: true}},
			mech(), {param: answer(denied, 0), want: Result{Outcome: OutcomeFailure, Text: TextNotAuthorized, Counted: true}},
			mech(), {param: answer(denied, 0), want: Result{Outcome: OutcomeTooManyFailures, Text: TextNotAuthorized, Counted: true}},
		}},
		{"payload without challenge", []step{{param: func(t *testing.T, _ []Challenge) string {
			return encodeResponse(t, map[string]any{"did": ed.did, "signature": "AAAA"})
		}, want: unknownMech}}},
		{"unknown mechanism", []step{{param: lit("PLAIN"), want: unknownMech}}},
		{"abort", []step{
			mech(), {param: lit("*"), want: Result{Outcome: OutcomeAborted, Text: TextAborted}},
			{param: answer(ed, 0), want: unknownMech},
		}},
		{"abort with nothing in progress", []step{{param: lit("*"), want: Result{Outcome: OutcomeAborted, Text: TextAborted}}}},
		{"abort mid-chunks", []step{
			mech(), {param: lit(strings.Repeat("A", ChunkSize)), want: cont},
			{param: lit("*"), want: Result{Outcome: OutcomeAborted, Text: TextAborted}},
		}},
		{"not base64", []step{mech(), {param: lit("not base64!"), want: badResponse}}},
		{"padded base64", []step{mech(), {param: func(t *testing.T, issued []Challenge) string {
			return base64.URLEncoding.EncodeToString([]byte(`{"did":"did:key:z","signature":"a"}`))
		}, want: badResponse}}},
		{"standard alphabet", []step{mech(), {param: lit(base64.RawStdEncoding.EncodeToString([]byte(`{"did":"did:key:z","signature":"??>>"}`)) + "+/"), want: badResponse}}},
		{"did without did:", []step{mech(), {param: func(t *testing.T, issued []Challenge) string {
			return encodeResponse(t, map[string]any{"did": "alice", "signature": "AA"})
		}, want: badResponse}}},
		{"empty payload", []step{mech(), {param: lit("+"), want: badResponse}}},
		{"unsupported method", []step{mech(), {param: withMethod("pds-oauth"), want: Result{Outcome: OutcomeFailure, Text: TextFailed}}}},
		{"atproto method with a did:key", []step{mech(), {param: withMethod("atproto"), want: failedCounted}}},
		{"signature not base64url", []step{mech(), {param: func(t *testing.T, issued []Challenge) string {
			return encodeResponse(t, map[string]any{"did": ed.did, "signature": "a+b/"})
		}, want: failedCounted}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &Verifier{
				Resolver: keyresolver.New(keyresolver.Options{}),
				Allow:    func(did string) bool { return did != denied.did },
			}
			runSteps(t, NewConversation(v, "sess-1", &countingReader{}), tt.steps)
		})
	}
}

func runSteps(t *testing.T, conv *Conversation, steps []step) {
	t.Helper()
	var issued []Challenge
	for i, st := range steps {
		got := conv.Handle(context.Background(), st.param(t, issued), baseTime.Add(st.at))
		if got.Outcome == OutcomeChallenge {
			ch := parseChallenge(t, got.Payload)
			if ch.SessionID != "sess-1" || ch.Timestamp != baseTime.Add(st.at).Unix() {
				t.Fatalf("step %d: challenge %s", i, ch.JSON)
			}
			issued = append(issued, ch)
			got.Payload = ""
		}
		if got.Outcome == OutcomeUnknownMechanism {
			if got.Payload != Mechanism {
				t.Fatalf("step %d: mechanism list %q", i, got.Payload)
			}
			got.Payload = ""
		}
		if (got.Outcome == OutcomeFailure || got.Outcome == OutcomeTooManyFailures) && got.Err == nil {
			t.Errorf("step %d: failure without a cause", i)
		}
		got.Err = nil
		if got != st.want {
			t.Fatalf("step %d: got %+v, want %+v", i, got, st.want)
		}
	}
}

func TestConversationChunking(t *testing.T) {
	ed := ed25519Signer(t, 1)
	members := func(ch Challenge) map[string]any {
		return map[string]any{"did": ed.did, "signature": base64.RawURLEncoding.EncodeToString(ed.sign(ch.JSON))}
	}
	tests := []struct {
		name  string
		lines func(t *testing.T, ch Challenge) []string
		want  Result
	}{
		{"two full chunks and +", func(t *testing.T, ch Challenge) []string {
			return append(chunks(paddedResponse(t, members(ch), 2*ChunkSize), ChunkSize), "+")
		}, success(ed)},
		{"full chunk and a short one", func(t *testing.T, ch Challenge) []string {
			return chunks(paddedResponse(t, members(ch), ChunkSize+100), ChunkSize)
		}, success(ed)},
		{"exactly one chunk and +", func(t *testing.T, ch Challenge) []string {
			return []string{paddedResponse(t, members(ch), ChunkSize), "+"}
		}, success(ed)},
		{"single oversized line", func(t *testing.T, ch Challenge) []string {
			return []string{paddedResponse(t, members(ch), 3*ChunkSize+4)}
		}, success(ed)},
		{"chunks then an oversized line", func(t *testing.T, ch Challenge) []string {
			p := paddedResponse(t, members(ch), 2*ChunkSize+104)
			return []string{p[:ChunkSize], p[ChunkSize:]}
		}, success(ed)},
		{"over the payload cap", func(t *testing.T, ch Challenge) []string {
			p := paddedResponse(t, members(ch), MaxPayloadBytes+ChunkSize)
			return append(chunks(p, ChunkSize), "+")
		}, badResponse},
		{"cap reached by one line", func(t *testing.T, ch Challenge) []string {
			return []string{strings.Repeat("A", MaxPayloadBytes+1)}
		}, badResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := NewConversation(&Verifier{Resolver: keyresolver.New(keyresolver.Options{})}, "sess-1", &countingReader{})
			res := conv.Handle(context.Background(), Mechanism, baseTime)
			if res.Outcome != OutcomeChallenge {
				t.Fatalf("mechanism: %+v", res)
			}
			lines := tt.lines(t, parseChallenge(t, res.Payload))
			var got Result
			for i, line := range lines {
				got = conv.Handle(context.Background(), line, baseTime)
				if got.Outcome != OutcomeContinue {
					if i != len(lines)-1 && tt.want != badResponse {
						t.Fatalf("line %d of %d ended the payload: %+v", i, len(lines), got)
					}
					break
				}
			}
			got.Err = nil
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("entropy exhausted") }

func TestConversationChallengeErrors(t *testing.T) {
	v := &Verifier{Resolver: keyresolver.New(keyresolver.Options{})}
	res := NewConversation(v, "s", failingReader{}).Handle(context.Background(), Mechanism, baseTime)
	if res.Outcome != OutcomeFailure || res.Text != TextFailed || res.Counted || res.Err == nil {
		t.Fatalf("random failure: %+v", res)
	}
	res = NewConversation(v, strings.Repeat("s", 300), nil).Handle(context.Background(), Mechanism, baseTime)
	if res.Outcome != OutcomeFailure || res.Counted {
		t.Fatalf("oversized session id: %+v", res)
	}
	conv := NewConversation(v, "s", nil)
	if res := conv.Handle(context.Background(), Mechanism, baseTime); res.Outcome != OutcomeChallenge {
		t.Fatalf("crypto/rand default: %+v", res)
	}
	if conv.Failures() != 0 {
		t.Fatal("failures without failing")
	}
}
