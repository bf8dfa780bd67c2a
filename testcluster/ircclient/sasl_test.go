package ircclient

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

func TestSASLChunks(t *testing.T) {
	tests := []struct {
		length int
		want   []int // chunk lengths; 0 stands for "+"
	}{
		{0, []int{0}},
		{1, []int{1}},
		{399, []int{399}},
		{400, []int{400, 0}},
		{401, []int{400, 1}},
		{800, []int{400, 400, 0}},
		{1000, []int{400, 400, 200}},
	}
	for _, tt := range tests {
		chunks := saslChunks(strings.Repeat("a", tt.length))
		var got []int
		for _, c := range chunks {
			if c == "+" {
				got = append(got, 0)
			} else {
				got = append(got, len(c))
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("saslChunks(%d) lengths = %v, want %v", tt.length, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("saslChunks(%d) lengths = %v, want %v", tt.length, got, tt.want)
				break
			}
		}
	}
}

// saslExchange is what the fake server saw of one SASL login.
type saslExchange struct {
	chunks   []string
	response saslResponse
	sig      []byte
}

// saslServer scripts a full LoginSASL flow: it sends challenge (split into
// 400-byte chunks like a server must), collects the response and reports it
// on got, then answers with success and the bearer token.
func saslServer(challenge []byte, got chan<- saslExchange) func(fc *fakeConn) {
	return func(fc *fakeConn) {
		fc.expect("CAP LS 302")
		fc.send(":srv CAP * LS :sasl=ATPROTO-CHALLENGE message-tags server-time")
		fc.expect("CAP REQ :sasl message-tags server-time")
		fc.send(":srv CAP * ACK :sasl message-tags server-time")
		fc.expect("NICK agent")
		fc.expect("USER agent 0 * :agent")
		fc.expect("AUTHENTICATE ATPROTO-CHALLENGE")
		for _, chunk := range saslChunks(base64.RawURLEncoding.EncodeToString(challenge)) {
			fc.send("AUTHENTICATE " + chunk)
		}
		var ex saslExchange
		var payload strings.Builder
		for {
			line := fc.readLine()
			chunk, ok := strings.CutPrefix(line, "AUTHENTICATE ")
			if !ok {
				fc.fail("expected AUTHENTICATE, got %q", line)
			}
			ex.chunks = append(ex.chunks, chunk)
			if chunk != "+" {
				payload.WriteString(chunk)
			}
			if len(chunk) < saslChunkSize {
				break
			}
		}
		body, err := base64.RawURLEncoding.DecodeString(payload.String())
		if err != nil {
			fc.fail("response is not base64url without padding: %v", err)
		}
		if err := json.Unmarshal(body, &ex.response); err != nil {
			fc.fail("response is not JSON: %v", err)
		}
		if ex.sig, err = base64.RawURLEncoding.DecodeString(ex.response.Signature); err != nil {
			fc.fail("signature is not base64url without padding: %v", err)
		}
		got <- ex
		did := ex.response.DID
		fc.send(
			":srv 900 agent agent!agent@palaver/key "+did+" :You are now logged in as "+did,
			":srv 903 agent :SASL authentication successful",
			":srv NOTICE * :API-BEARER tok-123",
		)
		fc.expect("CAP END")
		fc.send(":srv 001 agent :Welcome to srv, agent (authenticated as " + did + ")")
	}
}

func TestLoginSASL(t *testing.T) {
	edPriv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	secpPriv := secp256k1.PrivKeyFromBytes(sha256Of("palaver test key"))

	shortChallenge := []byte(`{"session_id":"c1","nonce":"n0nce","timestamp":1700000000}`)
	longChallenge := []byte(`{"session_id":"c1","nonce":"` + strings.Repeat("N", 600) + `","timestamp":1700000000}`)

	tests := []struct {
		name      string
		signer    Signer
		challenge []byte
		verify    func(t *testing.T, challenge, sig []byte)
	}{
		{"ed25519", NewEd25519Signer(edPriv), shortChallenge, func(t *testing.T, challenge, sig []byte) {
			if !ed25519.Verify(edPriv.Public().(ed25519.PublicKey), challenge, sig) {
				t.Error("ed25519 signature does not verify over the decoded challenge")
			}
		}},
		{"ed25519 chunked challenge", NewEd25519Signer(edPriv), longChallenge, func(t *testing.T, challenge, sig []byte) {
			if !ed25519.Verify(edPriv.Public().(ed25519.PublicKey), challenge, sig) {
				t.Error("ed25519 signature does not verify over the reassembled challenge")
			}
		}},
		{"secp256k1", NewSecp256k1Signer(secpPriv), shortChallenge, func(t *testing.T, challenge, sig []byte) {
			verifySecp256k1(t, secpPriv.PubKey(), challenge, sig)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan saslExchange, 1)
			c := dialTest(t, startFakeServer(t, saslServer(tt.challenge, got)))
			res, err := c.LoginSASL(testContext(t), tt.signer, "agent", "server-time")
			if err != nil {
				t.Fatal(err)
			}
			ex := <-got
			if ex.response.DID != tt.signer.DID() || ex.response.Method != "crypto" {
				t.Errorf("response = %+v", ex.response)
			}
			tt.verify(t, tt.challenge, ex.sig)
			if res.Token != "tok-123" || res.DID != tt.signer.DID() {
				t.Errorf("result = %q, %q", res.Token, res.DID)
			}
			if last := res.Lines[len(res.Lines)-1]; last.Command != "001" {
				t.Errorf("last line = %v, want 001", last)
			}
		})
	}
}

// paddedSigner has a DID long enough to make the response payload exactly
// two 400-byte chunks.
type paddedSigner struct{ did string }

func (s paddedSigner) DID() string                     { return s.did }
func (s paddedSigner) Sign(msg []byte) ([]byte, error) { return []byte{1, 2, 3}, nil }

func TestAuthenticateSASLEndsWholeChunksWithPlus(t *testing.T) {
	signer := paddedSigner{did: "did:example:"}
	for {
		body, _ := json.Marshal(saslResponse{DID: signer.did, Signature: "AQID", Method: "crypto"})
		if n := len(base64.RawURLEncoding.EncodeToString(body)); n == 2*saslChunkSize {
			break
		} else if n > 2*saslChunkSize {
			t.Fatal("could not size the payload")
		}
		signer.did += "a"
	}
	got := make(chan saslExchange, 1)
	c := dialTest(t, startFakeServer(t, saslServer([]byte("challenge"), got)))
	if _, err := c.LoginSASL(testContext(t), signer, "agent", "server-time"); err != nil {
		t.Fatal(err)
	}
	ex := <-got
	if len(ex.chunks) != 3 || len(ex.chunks[0]) != 400 || len(ex.chunks[1]) != 400 || ex.chunks[2] != "+" {
		t.Errorf("chunks have lengths %d; want 400, 400, then +", len(ex.chunks))
	}
	if ex.response.DID != signer.did {
		t.Errorf("reassembled DID = %q", ex.response.DID)
	}
}

func TestAuthenticateSASLFailure(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.expect("AUTHENTICATE ATPROTO-CHALLENGE")
		fc.send("AUTHENTICATE " + base64.RawURLEncoding.EncodeToString([]byte("c")))
		fc.readLine()
		fc.send(":srv 904 * :SASL authentication failed")
	})
	c := dialTest(t, addr)
	_, err := c.AuthenticateSASL(testContext(t), NewEd25519Signer(ed25519.NewKeyFromSeed(make([]byte, 32))))
	if !errors.Is(err, ErrSASLFailed) || !strings.Contains(err.Error(), "904 SASL authentication failed") {
		t.Fatalf("err = %v, want ErrSASLFailed with the 904 text", err)
	}
}

func verifySecp256k1(t *testing.T, pub *secp256k1.PublicKey, msg, sig []byte) {
	t.Helper()
	if len(sig) != 64 {
		t.Fatalf("secp256k1 signature has %d bytes, want 64 (compact r||s)", len(sig))
	}
	var r, s secp256k1.ModNScalar
	r.SetByteSlice(sig[:32])
	s.SetByteSlice(sig[32:])
	if s.IsOverHalfOrder() {
		t.Error("secp256k1 signature has a high S")
	}
	hash := sha256.Sum256(msg)
	if !ecdsa.NewSignature(&r, &s).Verify(hash[:], pub) {
		t.Error("secp256k1 signature does not verify over SHA-256 of the challenge")
	}
}

func TestSecp256k1SignerLowS(t *testing.T) {
	priv := secp256k1.PrivKeyFromBytes([]byte("0123456789abcdef0123456789abcdef"))
	signer := NewSecp256k1Signer(priv)
	for i := range 64 {
		msg := []byte(strings.Repeat("m", i))
		sig, err := signer.Sign(msg)
		if err != nil {
			t.Fatal(err)
		}
		verifySecp256k1(t, priv.PubKey(), msg, sig)
	}
}

func TestEd25519SignerBadKey(t *testing.T) {
	s := NewEd25519Signer(ed25519.PrivateKey{1, 2, 3})
	if s.DID() != "" {
		t.Errorf("DID = %q for a bad key", s.DID())
	}
	if _, err := s.Sign([]byte("x")); err == nil {
		t.Error("Sign succeeded with a bad key")
	}
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
