package keyresolver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/mr-tron/base58"
)

func TestParseMultikey(t *testing.T) {
	_, ed := testEd25519(1)
	_, k1 := testSecp256k1(2)
	uncompressed := append([]byte{0xe7, 0x01}, mustUncompressed(t)...)
	offCurve := append([]byte{0xe7, 0x01, 0x02}, bytes.Repeat([]byte{0xff}, 32)...)
	tests := []struct {
		name    string
		mb      string
		want    KeyType
		wantRaw []byte
		ok      bool
	}{
		{"spec ed25519", "z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", Ed25519, nil, true},
		{"spec secp256k1", "zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme", Secp256k1, nil, true},
		{"minted ed25519", mustMultikey(t, ed), Ed25519, ed.Raw, true},
		{"minted secp256k1", mustMultikey(t, k1), Secp256k1, k1.Raw, true},
		{"no multibase prefix", strings.TrimPrefix(mustMultikey(t, ed), "z"), 0, nil, false},
		{"base32 multibase", "b" + strings.TrimPrefix(mustMultikey(t, ed), "z"), 0, nil, false},
		{"bad base58", "z0OIl", 0, nil, false},
		{"empty", "", 0, nil, false},
		{"only prefix", "z", 0, nil, false},
		{"ed25519 short", "z" + base58.Encode(append([]byte{0xed, 0x01}, ed.Raw[:31]...)), 0, nil, false},
		{"ed25519 long", "z" + base58.Encode(append(append([]byte{0xed, 0x01}, ed.Raw...), 0)), 0, nil, false},
		{"secp256k1 uncompressed", "z" + base58.Encode(uncompressed), 0, nil, false},
		{"secp256k1 off curve", "z" + base58.Encode(offCurve), 0, nil, false},
		{"p256 prefix", "z" + base58.Encode(append([]byte{0x80, 0x24}, k1.Raw...)), 0, nil, false},
		{"ed25519 key under secp prefix", "z" + base58.Encode(append([]byte{0xe7, 0x01}, ed.Raw...)), 0, nil, false},
		{"too long", "z" + strings.Repeat("1", maxMultikeyLength), 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParseMultikey(tt.mb)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseMultikey(%q) = %+v, want error", tt.mb, key)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMultikey(%q): %v", tt.mb, err)
			}
			if key.Type != tt.want || (tt.wantRaw != nil && !bytes.Equal(key.Raw, tt.wantRaw)) {
				t.Fatalf("ParseMultikey(%q) = %+v", tt.mb, key)
			}
			if again := mustMultikey(t, key); again != tt.mb {
				t.Fatalf("EncodeMultikey round trip: %q != %q", again, tt.mb)
			}
		})
	}
}

func mustUncompressed(t *testing.T) []byte {
	t.Helper()
	priv, _ := testSecp256k1(3)
	return priv.PubKey().SerializeUncompressed()
}

func TestParseDIDKey(t *testing.T) {
	did := "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
	key, err := ParseDIDKey(did)
	if err != nil {
		t.Fatal(err)
	}
	if key.Type != Ed25519 || key.ID != did+"#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" {
		t.Fatalf("ParseDIDKey = %+v", key)
	}
	for _, bad := range []string{"did:web:example.com", "did:key:z", "did:key:6Mkha", "key:z6Mk"} {
		if _, err := ParseDIDKey(bad); err == nil {
			t.Errorf("ParseDIDKey(%q) succeeded", bad)
		}
	}
}

func TestVerify(t *testing.T) {
	msg := []byte(`{"session_id":"s","nonce":"n","timestamp":1}`)
	edPriv, ed := testEd25519(1)
	edSig := edPrivSign(edPriv, msg)
	k1Priv, k1 := testSecp256k1(2)
	k1Sig := signSecp256k1(k1Priv, msg)
	_, otherK1 := testSecp256k1(4)

	digest := sha256Sum(msg)
	der := ecdsa.Sign(k1Priv, digest).Serialize()
	zeroR := append(make([]byte, 32), k1Sig[32:]...)
	overflowR := append(bytes.Repeat([]byte{0xff}, 32), k1Sig[32:]...)

	tests := []struct {
		name string
		key  PublicKey
		msg  []byte
		sig  []byte
		want bool
	}{
		{"ed25519 valid", ed, msg, edSig, true},
		{"ed25519 other message", ed, []byte("other"), edSig, false},
		{"ed25519 truncated signature", ed, msg, edSig[:63], false},
		{"ed25519 flipped bit", ed, msg, flip(edSig, 10), false},
		{"secp256k1 low-S accepted", k1, msg, k1Sig, true},
		{"secp256k1 high-S rejected", k1, msg, highS(t, k1Sig), false},
		{"secp256k1 DER rejected", k1, msg, der, false},
		{"secp256k1 wrong key", otherK1, msg, k1Sig, false},
		{"secp256k1 other message", k1, []byte("other"), k1Sig, false},
		{"secp256k1 zero r", k1, msg, zeroR, false},
		{"secp256k1 r overflow", k1, msg, overflowR, false},
		{"ed25519 key tried as secp256k1", PublicKey{Type: Secp256k1, Raw: ed.Raw}, msg, edSig, false},
		{"secp256k1 key tried as ed25519", PublicKey{Type: Ed25519, Raw: k1.Raw}, msg, k1Sig, false},
		{"ed25519 signature against secp256k1 key", k1, msg, edSig, false},
		{"secp256k1 signature against ed25519 key", ed, msg, k1Sig, false},
		{"unknown type", PublicKey{Type: KeyType(7), Raw: ed.Raw}, msg, edSig, false},
		{"empty signature", ed, msg, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.Verify(tt.msg, tt.sig); got != tt.want {
				t.Fatalf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 1
	return out
}

func TestKeyTypeString(t *testing.T) {
	if Ed25519.String() != "ed25519" || Secp256k1.String() != "secp256k1" || KeyType(9).String() != "KeyType(9)" {
		t.Fatal("KeyType.String")
	}
}

func FuzzParseMultikey(f *testing.F) {
	_, ed := testEd25519(1)
	_, k1 := testSecp256k1(2)
	for _, seed := range []string{
		mustMultikey(f, ed), mustMultikey(f, k1), "z", "", "z111", "zQ3s", "z6Mk",
		"zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, mb string) {
		key, err := ParseMultikey(mb)
		if err != nil {
			return
		}
		switch {
		case key.Type == Ed25519 && len(key.Raw) == 32:
		case key.Type == Secp256k1 && len(key.Raw) == 33:
		default:
			t.Fatalf("ParseMultikey(%q) = %+v", mb, key)
		}
		if key.Verify([]byte("m"), make([]byte, 64)) {
			t.Fatal("zero signature verified")
		}
	})
}
