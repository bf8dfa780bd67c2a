package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// testBundle returns a sealed bundle holding a client-signed message, a
// client-signed edit with a reply and coord tags, a server-signed message, a
// guest's unsigned message and a legacy-signed one.
func testBundle(t *testing.T) (*Bundle, ed25519.PrivateKey) {
	t.Helper()
	serverPriv, serverPub := testKey(9)
	clientPriv, clientPub := testKey(1)
	venue := mustChannel(t, "#Ops")

	sign := func(priv ed25519.PrivateKey, m BundleMessage) BundleMessage {
		from := string(m.SenderDID)
		if from == "" {
			from = m.Tags["account"]
		}
		doc := Message{
			Envelope: Envelope{From: from, MsgID: m.MsgID, Venue: venue},
			Body:     m.Text,
			Reply:    ReplyFromTags(m.Tags),
			Edit:     string(m.ReplacesMsgID),
			Tags:     m.Tags,
		}
		m.Signature = NullString(Sign(priv, mustCanonical(t, doc)))
		return m
	}
	b := &Bundle{
		ServerName: "irc.example",
		Channel:    "#Ops",
		ExportedAt: "2026-08-10T12:00:00Z",
		Keys:       map[string]string{KID(clientPub): EncodePublicKey(clientPub), KID(serverPub): EncodePublicKey(serverPub)},
		DIDKeys:    map[string]string{testDID: EncodePublicKey(clientPub)},
		Messages: []BundleMessage{
			sign(clientPriv, BundleMessage{MsgID: "01KYVT1W2P0000000000000000", Channel: "#Ops", Sender: "alice", SenderDID: testDID, Text: "ship it", Timestamp: 1786000000}),
			sign(clientPriv, BundleMessage{
				MsgID: "01KYVT5Z8Q0000000000000000", Channel: "#ops", Sender: "alice", SenderDID: testDID,
				Text: "revised: <use> the \u2028 cached index", Timestamp: 1786000060, ReplacesMsgID: "01KYVT1W2P0000000000000000",
				Tags: map[string]string{TagReply: "01KYVT0000000000000000000A", "+freeq.at/task-id": "T1", "+freeq.at/reactions": "👍:2"},
			}),
			sign(serverPriv, BundleMessage{MsgID: "01KYVT6000000000000000000B", Channel: "#ops", Sender: "bot", Text: "relayed", Timestamp: 1786000120, Tags: map[string]string{"account": "did:plc:bot"}}),
			{MsgID: "01KYVT6100000000000000000C", Channel: "#ops", Sender: "guest1", Text: "hello?", Timestamp: 1786000180},
			{MsgID: "01KYVT6200000000000000000D", Channel: "#ops", Sender: "old", SenderDID: "did:plc:old", Text: "legacy", Timestamp: 1786000240, Signature: "/82Len7Z3lcnJsRKEZ9fYPfR4UqC0KhkxW01m9LTeqXN36TPPNdN+jROTIWYFvjiPyEXZUH7ZCyEJC4f0JH/BQ=="},
		},
	}
	if err := SignBundle(serverPriv, b); err != nil {
		t.Fatalf("SignBundle: %v", err)
	}
	return b, serverPriv
}

func encodeBundle(t *testing.T, b *Bundle) []byte {
	t.Helper()
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestVerifyBundle(t *testing.T) {
	b, _ := testBundle(t)
	data := encodeBundle(t, b)
	report, err := VerifyBundle(data)
	if err != nil {
		t.Fatalf("VerifyBundle: %v", err)
	}
	if report.BundleSignature != Valid || report.Channel != "#Ops" || report.ServerName != "irc.example" {
		t.Fatalf("report header %+v", report)
	}
	want := []struct {
		signed   bool
		byServer bool
		verdict  Verdict
		reason   Reason
	}{
		{true, false, Valid, ReasonValid},
		{true, false, Valid, ReasonValid},
		{true, true, Valid, ReasonValid},
		{false, false, Unverifiable, ReasonUnsigned},
		{true, false, Unverifiable, ReasonLegacyFormat},
	}
	if len(report.Messages) != len(want) {
		t.Fatalf("%d message reports, want %d", len(report.Messages), len(want))
	}
	for i, w := range want {
		got := report.Messages[i]
		if got.Signed != w.signed || got.ByServer != w.byServer || got.Verdict != w.verdict || got.Reason != w.reason {
			t.Errorf("message %d: %+v, want %+v", i, got, w)
		}
	}
	valid, invalid, unverifiable, unsigned := report.Tally()
	if valid != 3 || invalid != 0 || unverifiable != 1 || unsigned != 1 {
		t.Fatalf("Tally = %d %d %d %d", valid, invalid, unverifiable, unsigned)
	}
}

func TestBundleJSONShape(t *testing.T) {
	b, _ := testBundle(t)
	var fields map[string]any
	if err := json.Unmarshal(encodeBundle(t, b), &fields); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"bundle_version", "server_name", "server_public_key", "channel", "exported_at", "message_count", "keys", "did_keys", "messages", "bundle_signature"} {
		if _, ok := fields[key]; !ok {
			t.Errorf("bundle lacks %q", key)
		}
	}
	if fields["bundle_version"] != "2" || fields["message_count"] != float64(5) {
		t.Errorf("bundle_version %v, message_count %v", fields["bundle_version"], fields["message_count"])
	}
	guest := fields["messages"].([]any)[3].(map[string]any)
	for _, key := range []string{"sender_did", "signature", "replaces_msgid"} {
		if v, ok := guest[key]; !ok || v != nil {
			t.Errorf("guest message %s = %v, want null", key, v)
		}
	}
	if tags, ok := guest["tags"].(map[string]any); !ok || len(tags) != 0 {
		t.Errorf("guest message tags = %v, want {}", guest["tags"])
	}
}

func TestVerifyBundleDetectsTampering(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(t *testing.T, b *Bundle, serverPriv ed25519.PrivateKey) []byte
		want    error
		invalid int // messages reported invalid
	}{
		{
			"text edited after sealing",
			func(t *testing.T, b *Bundle, _ ed25519.PrivateKey) []byte {
				b.Messages[0].Text = "ship it now"
				return encodeBundle(t, b)
			},
			ErrBundleSignature, 1,
		},
		{
			"text edited and resealed by the server",
			func(t *testing.T, b *Bundle, serverPriv ed25519.PrivateKey) []byte {
				b.Messages[1].Text = "revised: something else"
				if err := SignBundle(serverPriv, b); err != nil {
					t.Fatal(err)
				}
				return encodeBundle(t, b)
			},
			ErrMessageInvalid, 1,
		},
		{
			"edit link stripped and resealed",
			func(t *testing.T, b *Bundle, serverPriv ed25519.PrivateKey) []byte {
				b.Messages[1].ReplacesMsgID = ""
				if err := SignBundle(serverPriv, b); err != nil {
					t.Fatal(err)
				}
				return encodeBundle(t, b)
			},
			ErrMessageInvalid, 1,
		},
		{
			"bundle signature altered",
			func(t *testing.T, b *Bundle, _ ed25519.PrivateKey) []byte {
				sig := []byte(b.BundleSignature)
				sig[10] ^= 1
				b.BundleSignature = string(sig)
				return encodeBundle(t, b)
			},
			ErrBundleSignature, 0,
		},
		{
			"bundle signature removed",
			func(t *testing.T, b *Bundle, _ ed25519.PrivateKey) []byte {
				b.BundleSignature = ""
				return encodeBundle(t, b)
			},
			ErrBundleSignature, 0,
		},
		{
			"exported_at changed",
			func(t *testing.T, b *Bundle, _ ed25519.PrivateKey) []byte {
				b.ExportedAt = "2027-01-01T00:00:00Z"
				return encodeBundle(t, b)
			},
			ErrBundleSignature, 0,
		},
		{
			"message dropped and count fixed, not resealed",
			func(t *testing.T, b *Bundle, _ ed25519.PrivateKey) []byte {
				b.Messages = b.Messages[1:]
				b.MessageCount = len(b.Messages)
				return encodeBundle(t, b)
			},
			ErrBundleSignature, 0,
		},
		{
			"message count disagrees",
			func(t *testing.T, b *Bundle, serverPriv ed25519.PrivateKey) []byte {
				data := encodeBundle(t, b)
				return []byte(strings.Replace(string(data), `"message_count": 5`, `"message_count": 6`, 1))
			},
			ErrBundleMalformed, 0,
		},
		{
			"not JSON",
			func(*testing.T, *Bundle, ed25519.PrivateKey) []byte { return []byte("{") },
			ErrBundleMalformed, 0,
		},
		{
			"duplicate key",
			func(*testing.T, *Bundle, ed25519.PrivateKey) []byte {
				return []byte(`{"channel":"#a","channel":"#b"}`)
			},
			ErrBundleMalformed, 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, serverPriv := testBundle(t)
			report, err := VerifyBundle(tt.tamper(t, b, serverPriv))
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyBundle error %v, want %v", err, tt.want)
			}
			_, invalid, _, _ := report.Tally()
			if invalid != tt.invalid {
				t.Fatalf("%d invalid messages, want %d", invalid, tt.invalid)
			}
		})
	}
}

// TestVerifyBundleCoversUnknownFields checks that the bundle signature is
// checked over the fields the bundle has, including ones a newer exporter
// adds that this package does not model.
func TestVerifyBundleCoversUnknownFields(t *testing.T) {
	b, serverPriv := testBundle(t)
	data := resignedWith(t, b, serverPriv, func(f map[string]any) {
		f["exporter"] = map[string]any{"name": "freeq", "build": "2026.8"}
	})
	if _, err := VerifyBundle(data); err != nil {
		t.Fatalf("VerifyBundle with an extra field: %v", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	fields["exporter"].(map[string]any)["build"] = "forged"
	data, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBundle(data); !errors.Is(err, ErrBundleSignature) {
		t.Fatalf("VerifyBundle after changing an extra field: %v, want %v", err, ErrBundleSignature)
	}
}

func TestSignBundleRefusesForeignServerKey(t *testing.T) {
	priv, _ := testKey(9)
	_, other := testKey(8)
	b := &Bundle{ServerPublicKey: EncodePublicKey(other)}
	if err := SignBundle(priv, b); err == nil {
		t.Fatal("SignBundle sealed a bundle naming another server key")
	}
	if err := SignBundle(priv[:10], &Bundle{}); err == nil {
		t.Fatal("SignBundle accepted a short private key")
	}
}

func TestNullString(t *testing.T) {
	var v struct {
		A NullString `json:"a"`
		B NullString `json:"b"`
	}
	if err := json.Unmarshal([]byte(`{"a":null,"b":"x"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != "" || v.B != "x" {
		t.Fatalf("decoded %+v", v)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"a":null,"b":"x"}` {
		t.Fatalf("encoded %s", out)
	}
	if err := json.Unmarshal([]byte(`{"a":5}`), &v); err == nil {
		t.Fatal("a number decoded as a string")
	}
}
