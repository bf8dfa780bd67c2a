package ircclient

import (
	"crypto/ed25519"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/mr-tron/base58"
)

// Multicodec prefixes (unsigned varints) of the did:key public key types.
var (
	multicodecEd25519   = []byte{0xed, 0x01}
	multicodecSecp256k1 = []byte{0xe7, 0x01}
)

// DIDKeyEd25519 returns the did:key ("did:key:z6Mk...") of an ed25519
// public key: multicodec 0xed01, the 32 key bytes, base58btc, multibase 'z'.
func DIDKeyEd25519(pub ed25519.PublicKey) string {
	return didKey(multicodecEd25519, pub)
}

// DIDKeySecp256k1 returns the did:key ("did:key:zQ3s...") of a secp256k1
// public key: multicodec 0xe701 and the 33-byte compressed SEC1 key.
func DIDKeySecp256k1(pub *secp256k1.PublicKey) string {
	return didKey(multicodecSecp256k1, pub.SerializeCompressed())
}

func didKey(codec, key []byte) string {
	buf := make([]byte, 0, len(codec)+len(key))
	buf = append(append(buf, codec...), key...)
	return "did:key:z" + base58.Encode(buf)
}
