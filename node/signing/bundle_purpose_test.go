package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"

	"github.com/palaver-chat/palaver/node/canonical"
)

// resignedWith re-signs the bundle's JSON fields after changing them with edit, as a server
// would that signed such a document.
func resignedWith(t *testing.T, b *Bundle, priv ed25519.PrivateKey, edit func(map[string]any)) []byte {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(encodeBundle(t, b), &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "bundle_signature")
	edit(fields)
	unsigned, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := canonical.Transform(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	fields["bundle_signature"] = b64.EncodeToString(ed25519.Sign(priv, signed))
	data, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBundlePurpose: the server key signs a bundle together with its purpose; a bundle without
// one (as freeq writes them) still verifies, one with another purpose does not.
func TestBundlePurpose(t *testing.T) {
	b, serverPriv := testBundle(t)
	if b.Purpose != BundlePurpose {
		t.Fatalf("purpose %q, want %q", b.Purpose, BundlePurpose)
	}
	if _, err := VerifyBundle(encodeBundle(t, b)); err != nil {
		t.Fatalf("a signed bundle: %v", err)
	}
	noPurpose := resignedWith(t, b, serverPriv, func(f map[string]any) { delete(f, "purpose") })
	if _, err := VerifyBundle(noPurpose); err != nil {
		t.Fatalf("a bundle without a purpose: %v", err)
	}
	other := resignedWith(t, b, serverPriv, func(f map[string]any) { f["purpose"] = "palaver federation batch v1" })
	if _, err := VerifyBundle(other); !errors.Is(err, ErrBundleMalformed) {
		t.Fatalf("a bundle with another purpose: %v, want %v", err, ErrBundleMalformed)
	}
}
