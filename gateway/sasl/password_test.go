package sasl

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

const (
	pwDID   = "did:plc:pwuser"
	pwNick  = "pwnick"
	pwOther = "did:plc:other"
)

// longLogin is a 200-byte login name of pwDID, for responses that need several chunks.
var longLogin = strings.Repeat("L", 200)

// passwordVerifier serves pwDID (login by DID or by its nick pwNick) with the given client
// passwords under one salt, and pwOther with "otherpass".
func passwordVerifier(t testing.TB, passwords map[string]string) *Verifier {
	t.Helper()
	salt := bytes.Repeat([]byte{9}, SaltBytes)
	cred := Credential{DID: pwDID, Salt: salt, Iterations: DefaultIterations}
	for name, pw := range passwords {
		stored, server, err := DeriveKeys(pw, salt, DefaultIterations)
		if err != nil {
			t.Fatal(err)
		}
		cred.Keys = append(cred.Keys, PasswordKey{Name: name, StoredKey: stored, ServerKey: server})
	}
	otherSalt := bytes.Repeat([]byte{3}, SaltBytes)
	stored, server, err := DeriveKeys("otherpass", otherSalt, DefaultIterations)
	if err != nil {
		t.Fatal(err)
	}
	other := Credential{DID: pwOther, Salt: otherSalt, Iterations: DefaultIterations,
		Keys: []PasswordKey{{Name: "x", StoredKey: stored, ServerKey: server}}}
	return &Verifier{Passwords: func(login string) (Credential, bool) {
		switch login {
		case pwDID, pwNick, longLogin:
			return cred, len(cred.Keys) > 0
		case pwOther:
			return other, true
		}
		return Credential{}, false
	}}
}

func plainLine(authzid, authcid, pw string) string {
	return base64.StdEncoding.EncodeToString([]byte(authzid + "\x00" + authcid + "\x00" + pw))
}

func TestPlain(t *testing.T) {
	v := passwordVerifier(t, map[string]string{"irssi": "correct horse", "phone": "battery staple"})
	ok := Result{Outcome: OutcomeSuccess, DID: pwDID, Method: "plain"}
	for _, tc := range []struct {
		name  string
		lines []string
		want  Result
	}{
		{"by DID", []string{plainLine("", pwDID, "correct horse")}, ok},
		{"by nick, other password", []string{plainLine("", pwNick, "battery staple")}, ok},
		{"authzid is the DID", []string{plainLine(pwDID, pwNick, "correct horse")}, ok},
		{"authzid is another DID", []string{plainLine(pwOther, pwDID, "correct horse")}, failedCounted},
		{"wrong password", []string{plainLine("", pwDID, "wrong")}, failedCounted},
		{"unknown login", []string{plainLine("", "did:plc:nobody", "correct horse")}, failedCounted},
		{"empty authcid", []string{plainLine("", "", "correct horse")}, badResponse},
		{"empty password", []string{plainLine("", pwDID, "")}, badResponse},
		{"NUL in password", []string{base64.StdEncoding.EncodeToString([]byte("\x00" + pwDID + "\x00correct\x00horse"))}, badResponse},
		{"not base64", []string{"!!!"}, badResponse},
		{"empty response", []string{"+"}, badResponse},
		{"chunk over 400 bytes", []string{strings.Repeat("A", 500)}, Result{Outcome: OutcomeTooLong, Text: TextTooLong}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := NewConversation(v, "s", nil)
			if r := conv.Handle(context.Background(), "plain", baseTime); r.Outcome != OutcomeChallenge || r.Payload != "+" {
				t.Fatalf("PLAIN: %+v", r)
			}
			var got Result
			for _, l := range tc.lines {
				got = conv.Handle(context.Background(), l, baseTime)
			}
			if got.Outcome != tc.want.Outcome || got.DID != tc.want.DID || got.Method != tc.want.Method ||
				got.Text != tc.want.Text || got.Counted != tc.want.Counted {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPlainChunked sends PLAIN responses of 400 and 800 bytes (chunks, then "+") and of 500
// bytes (a full chunk and a short one).
func TestPlainChunked(t *testing.T) {
	for _, tc := range []struct {
		size    int
		authzid string
	}{{400, ""}, {500, ""}, {800, longLogin}} {
		raw := tc.size / 4 * 3
		pw := strings.Repeat("p", raw-len(tc.authzid)-len(longLogin)-2)
		v := passwordVerifier(t, map[string]string{"long": pw})
		payload := plainLine(tc.authzid, longLogin, pw)
		if len(payload) != tc.size {
			t.Fatalf("payload of %d bytes, want %d", len(payload), tc.size)
		}
		conv := NewConversation(v, "s", nil)
		conv.Handle(context.Background(), MechPlain, baseTime)
		for len(payload) >= ChunkSize {
			if r := conv.Handle(context.Background(), payload[:ChunkSize], baseTime); r.Outcome != OutcomeContinue {
				t.Fatalf("%d: chunk answered %+v", tc.size, r)
			}
			payload = payload[ChunkSize:]
		}
		if payload == "" {
			payload = "+"
		}
		if got := conv.Handle(context.Background(), payload, baseTime); got.Outcome != OutcomeSuccess || got.DID != pwDID {
			t.Fatalf("%d: %+v", tc.size, got)
		}
	}
}

// scramLogin runs a SCRAM-SHA-256 exchange with xdg-go/scram's client against a conversation
// and returns the final Result.
func scramLogin(t *testing.T, v *Verifier, user, password, authzid string) Result {
	t.Helper()
	client, err := scram.SHA256.NewClient(user, password, authzid)
	if err != nil {
		t.Fatal(err)
	}
	cc := client.NewConversation()
	conv := NewConversation(v, "s", nil)
	if r := conv.Handle(context.Background(), "SCRAM-SHA-256", baseTime); r.Outcome != OutcomeChallenge || r.Payload != "+" {
		t.Fatalf("SCRAM-SHA-256: %+v", r)
	}
	serverMsg := ""
	for !cc.Done() {
		out, err := cc.Step(serverMsg)
		if err != nil {
			t.Fatalf("client step after %q: %v", serverMsg, err)
		}
		line := "+"
		if out != "" {
			line = base64.StdEncoding.EncodeToString([]byte(out))
		}
		r := conv.Handle(context.Background(), line, baseTime)
		if r.Outcome != OutcomeChallenge {
			return r
		}
		dec, err := base64.StdEncoding.DecodeString(r.Payload)
		if err != nil {
			t.Fatalf("server payload %q: %v", r.Payload, err)
		}
		serverMsg = string(dec)
	}
	// The client verified server-final; acknowledge it.
	if !cc.Valid() {
		t.Fatal("server signature did not verify")
	}
	return conv.Handle(context.Background(), "+", baseTime)
}

func TestSCRAM(t *testing.T) {
	v := passwordVerifier(t, map[string]string{"irssi": "correct horse", "phone": "battery staple"})
	ok := Result{Outcome: OutcomeSuccess, DID: pwDID, Method: "scram-sha-256"}
	for _, tc := range []struct {
		name, user, pw, authzid string
		want                    Result
	}{
		{"by DID", pwDID, "correct horse", "", ok},
		{"by nick, second password", pwNick, "battery staple", "", ok},
		{"authzid is the DID", pwNick, "correct horse", pwDID, ok},
		{"authzid is another DID", pwDID, "correct horse", pwOther, failedCounted},
		{"wrong password", pwDID, "wrong", "", failedCounted},
		{"unknown user", "did:plc:nobody", "correct horse", "", failedCounted},
		{"other DID's password", pwDID, "otherpass", "", failedCounted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scramLogin(t, v, tc.user, tc.pw, tc.authzid)
			if got.Outcome != tc.want.Outcome || got.DID != tc.want.DID || got.Method != tc.want.Method ||
				got.Counted != tc.want.Counted {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSCRAMUnknownUserSalt checks that an unknown user is announced a stable salt and the usual
// iteration count, so the exchange does not tell whether the login exists.
func TestSCRAMUnknownUserSalt(t *testing.T) {
	v := passwordVerifier(t, nil)
	first := func(user string) string {
		conv := NewConversation(v, "s", nil)
		conv.Handle(context.Background(), MechSCRAM, baseTime)
		r := conv.Handle(context.Background(), base64.StdEncoding.EncodeToString([]byte("n,,n="+user+",r=abc")), baseTime)
		dec, _ := base64.StdEncoding.DecodeString(r.Payload)
		_, rest, _ := strings.Cut(string(dec), ",s=")
		return rest
	}
	a, b, c := first("ghost"), first("ghost"), first("wraith")
	if a == "" || a != b || a == c || !strings.HasSuffix(a, ",i=4096") {
		t.Fatalf("salts %q %q %q", a, b, c)
	}
}

func TestParseClientFirst(t *testing.T) {
	for _, tc := range []struct {
		in    string
		ok    bool
		user  string
		authz string
	}{
		{"n,,n=user,r=abc", true, "user", ""},
		{"y,,n=user,r=abc", true, "user", ""},
		{"n,a=did:plc:x,n=nick,r=abc,ext=1", true, "nick", "did:plc:x"},
		{"n,,n=a=2Cb=3Dc,r=abc", true, "a,b=c", ""},
		{"p=tls-unique,,n=user,r=abc", false, "", ""},
		{"n,,m=ext,n=user,r=abc", false, "", ""},
		{"n,,n=,r=abc", false, "", ""},
		{"n,,n=user", false, "", ""},
		{"n,,n=user,r=", false, "", ""},
		{"n,,n=a=ZZ,r=abc", false, "", ""},
		{"n,x,n=user,r=abc", false, "", ""},
		{"n,,n=user,r=" + strings.Repeat("a", maxSCRAMNonce+1), false, "", ""},
		{"", false, "", ""},
	} {
		got, err := ParseClientFirst(tc.in)
		if (err == nil) != tc.ok || got.User != tc.user || got.AuthzID != tc.authz {
			t.Errorf("%q: %+v, %v", tc.in, got, err)
		}
	}
}

func TestParseClientFinal(t *testing.T) {
	proof := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"c=biws,r=abc,p=" + proof, true},
		{"c=biws,r=abc,x=y,p=" + proof, true},
		{"c=biws,r=abc", false},
		{"c=biws,r=abc,p=AAAA", false},
		{"r=abc,c=biws,p=" + proof, false},
		{"c=!!,r=abc,p=" + proof, false},
		{"c=biws,p=" + proof, false},
	} {
		if _, err := ParseClientFinal(tc.in); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
}

func TestNewPasswordAndDeriveKeys(t *testing.T) {
	a, err := NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPassword()
	if len(a) != 32 || a == b || strings.ToLower(a) != a {
		t.Fatalf("passwords %q %q", a, b)
	}
	salt := bytes.Repeat([]byte{1}, SaltBytes)
	// The verifier is the one xdg-go/scram's client computes for the same password and salt.
	client, _ := scram.SHA256.NewClient("u", a, "")
	want := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: DefaultIterations})
	stored, server, err := DeriveKeys(a, salt, DefaultIterations)
	if err != nil || !bytes.Equal(stored, want.StoredKey) || !bytes.Equal(server, want.ServerKey) {
		t.Fatalf("DeriveKeys differs from the reference client: %v", err)
	}
	if _, _, err := DeriveKeys("", salt, DefaultIterations); err == nil {
		t.Fatal("empty password accepted")
	}
	if _, _, err := DeriveKeys("a\u0007b", salt, DefaultIterations); err == nil {
		t.Fatal("control character accepted")
	}
}

func TestMechanisms(t *testing.T) {
	if got := (&Verifier{}).Mechanisms(); got != Mechanism {
		t.Fatalf("without passwords: %q", got)
	}
	if got := passwordVerifier(t, nil).Mechanisms(); got != "ATPROTO-CHALLENGE,PLAIN,SCRAM-SHA-256" {
		t.Fatalf("with passwords: %q", got)
	}
	conv := NewConversation(&Verifier{}, "s", nil)
	if r := conv.Handle(context.Background(), MechPlain, baseTime); r.Outcome != OutcomeUnknownMechanism || r.Payload != Mechanism {
		t.Fatalf("PLAIN without passwords: %+v", r)
	}
}

// TestPasswordFailuresAreCounted checks that three wrong passwords end the conversation.
func TestPasswordFailuresAreCounted(t *testing.T) {
	v := passwordVerifier(t, map[string]string{"a": "right"})
	conv := NewConversation(v, "s", nil)
	var last Result
	for range MaxFailures {
		conv.Handle(context.Background(), MechPlain, baseTime)
		last = conv.Handle(context.Background(), plainLine("", pwDID, "wrong"), baseTime)
	}
	if last.Outcome != OutcomeTooManyFailures {
		t.Fatalf("third failure: %+v", last)
	}
	if r := conv.Handle(context.Background(), MechPlain, baseTime); r.Outcome != OutcomeIgnored {
		t.Fatalf("after the limit: %+v", r)
	}
}

func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00user\x00pass"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	f.Add([]byte{0xff, 0, 'a', 0, 'b'})
	f.Fuzz(func(t *testing.T, msg []byte) {
		p, err := ParsePlain(msg)
		if err != nil {
			return
		}
		if p.AuthcID == "" || p.Password == "" || p.AuthzID+"\x00"+p.AuthcID+"\x00"+p.Password != string(msg) {
			t.Fatalf("%q parsed as %+v", msg, p)
		}
	})
}

func FuzzSCRAMMessages(f *testing.F) {
	f.Add("n,,n=user,r=abc", "c=biws,r=abc,p=AAAA")
	f.Add("n,a=x,n=a=2C,r=z", "c=bixhPXgs,r=zzz,p="+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	v := passwordVerifier(f, map[string]string{"a": "pw"})
	f.Fuzz(func(t *testing.T, first, final string) {
		if cf, err := ParseClientFirst(first); err == nil && (cf.User == "" || cf.Nonce == "" || !strings.HasSuffix(first, cf.Bare)) {
			t.Fatalf("%q parsed as %+v", first, cf)
		}
		if cf, err := ParseClientFinal(final); err == nil && (len(cf.Proof) != 32 || !strings.HasPrefix(final, cf.WithoutProof)) {
			t.Fatalf("%q parsed as %+v", final, cf)
		}
		// A whole exchange with these messages never logs in: the proof is not known.
		conv := NewConversation(v, "s", nil)
		conv.Handle(context.Background(), MechSCRAM, baseTime)
		for _, m := range []string{first, final, ""} {
			line := "+"
			if m != "" {
				line = base64.StdEncoding.EncodeToString([]byte(m))
			}
			if len(line) > ChunkSize {
				return
			}
			if r := conv.Handle(context.Background(), line, baseTime); r.Outcome == OutcomeSuccess {
				t.Fatalf("logged in with %q / %q", first, final)
			} else if r.Outcome != OutcomeChallenge {
				return
			}
		}
	})
}

func TestParsePlainLimits(t *testing.T) {
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{"\x00u\x00" + strings.Repeat("p", 400), true},
		{"\x00u\x00" + strings.Repeat("p", 401), false},
		{strings.Repeat("z", 401) + "\x00u\x00p", false},
		{"\x00u\x00p\xff", false},
	} {
		if _, err := ParsePlain([]byte(tc.msg)); (err == nil) != tc.ok {
			t.Errorf("%d bytes: %v", len(tc.msg), err)
		}
	}
}
