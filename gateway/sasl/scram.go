package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SCRAM-SHA-256 (RFC 5802, RFC 7677), server side, without channel binding. It is written here
// rather than taken from a SCRAM library because a DID has several client passwords under one
// salt: the exchange announces that salt and the client's proof is checked against the
// StoredKey of each password, which the libraries' servers (one credential per user) cannot do.
// The tests drive it with github.com/xdg-go/scram's client.

const (
	maxSCRAMNonce   = 128 // bytes of the client's nonce: keeps server-first within one AUTHENTICATE line
	maxSCRAMMessage = 2048
	serverNonceLen  = 24
)

// ClientFirst is a parsed client-first-message.
type ClientFirst struct {
	GS2Header string // "n,," "y,," or with "a=<authzid>" between the commas
	AuthzID   string
	User      string
	Nonce     string
	Bare      string // client-first-message-bare, as it takes part in AuthMessage
}

// ClientFinal is a parsed client-final-message.
type ClientFinal struct {
	ChannelBinding []byte // the decoded c= attribute
	Nonce          string
	Proof          []byte
	WithoutProof   string // client-final-message-without-proof
}

// ParseClientFirst parses a client-first-message. Channel binding ("p=") and mandatory
// extensions ("m=") are refused.
func ParseClientFirst(msg string) (ClientFirst, error) {
	if len(msg) > maxSCRAMMessage || !utf8.ValidString(msg) {
		return ClientFirst{}, fmt.Errorf("%w: client-first-message too long or not UTF-8", ErrBadResponse)
	}
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || (flag != "n" && flag != "y") {
		return ClientFirst{}, fmt.Errorf("%w: client-first-message: channel binding flag %q not supported", ErrBadResponse, flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return ClientFirst{}, fmt.Errorf("%w: client-first-message has no GS2 header", ErrBadResponse)
	}
	var cf ClientFirst
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return ClientFirst{}, fmt.Errorf("%w: client-first-message: bad authzid", ErrBadResponse)
		}
		name, err := decodeSASLName(v)
		if err != nil {
			return ClientFirst{}, err
		}
		cf.AuthzID = name
	}
	cf.GS2Header = flag + "," + authz + ","
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return ClientFirst{}, fmt.Errorf("%w: client-first-message-bare lacks n= or r=", ErrBadResponse)
	}
	user, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return ClientFirst{}, fmt.Errorf("%w: client-first-message-bare does not start with n= (mandatory extensions are not supported)", ErrBadResponse)
	}
	name, err := decodeSASLName(user)
	if err != nil {
		return ClientFirst{}, err
	}
	if name == "" {
		return ClientFirst{}, fmt.Errorf("%w: empty SCRAM user name", ErrBadResponse)
	}
	cf.User = name
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || !validNonce(nonce) || len(nonce) > maxSCRAMNonce {
		return ClientFirst{}, fmt.Errorf("%w: client nonce missing, over %d bytes or not printable", ErrBadResponse, maxSCRAMNonce)
	}
	cf.Nonce = nonce
	return cf, nil
}

// ParseClientFinal parses a client-final-message: c=, r=, optional extensions, then p= last.
func ParseClientFinal(msg string) (ClientFinal, error) {
	if len(msg) > maxSCRAMMessage {
		return ClientFinal{}, fmt.Errorf("%w: client-final-message too long", ErrBadResponse)
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return ClientFinal{}, fmt.Errorf("%w: client-final-message has no proof", ErrBadResponse)
	}
	var cf ClientFinal
	cf.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.Strict().DecodeString(msg[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return ClientFinal{}, fmt.Errorf("%w: client proof is not base64 of %d bytes", ErrBadResponse, sha256.Size)
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 {
		return ClientFinal{}, fmt.Errorf("%w: client-final-message lacks c= or r=", ErrBadResponse)
	}
	cb, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return ClientFinal{}, fmt.Errorf("%w: client-final-message does not start with c=", ErrBadResponse)
	}
	if cf.ChannelBinding, err = base64.StdEncoding.Strict().DecodeString(cb); err != nil {
		return ClientFinal{}, fmt.Errorf("%w: channel binding is not base64", ErrBadResponse)
	}
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || !validNonce(nonce) {
		return ClientFinal{}, fmt.Errorf("%w: client-final-message nonce missing or not printable", ErrBadResponse)
	}
	cf.Nonce = nonce
	return cf, nil
}

// decodeSASLName undoes RFC 5802's escaping ("=2C" for ',', "=3D" for '=').
func decodeSASLName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in SCRAM name", ErrBadResponse)
		}
		i += 2
	}
	return b.String(), nil
}

// validNonce: printable ASCII but ','.
func validNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// scramState is the server side of one SCRAM-SHA-256 exchange.
type scramState struct {
	step        int // 0: awaiting client-first; 1: awaiting client-final; 2: awaiting the final empty response
	first       ClientFirst
	serverFirst string
	nonce       string
	cred        Credential
	known       bool
	did         string
}

// scramStep handles one complete client message of the exchange. It returns the server's
// next message (to send base64-encoded), done once the client has acknowledged server-final,
// or an error (wrapping ErrBadResponse or ErrRejected).
func (v *Verifier) scramStep(st *scramState, msg []byte, random func([]byte) error) (reply string, done bool, err error) {
	switch st.step {
	case 0:
		first, err := ParseClientFirst(string(msg))
		if err != nil {
			return "", false, err
		}
		var sn [serverNonceLen]byte
		if err := random(sn[:]); err != nil {
			return "", false, fmt.Errorf("sasl: drawing a server nonce: %w", err)
		}
		st.first = first
		st.cred, st.known = v.credential(first.User)
		st.nonce = first.Nonce + base64.RawURLEncoding.EncodeToString(sn[:])
		st.serverFirst = "r=" + st.nonce + ",s=" + base64.StdEncoding.EncodeToString(st.cred.Salt) +
			",i=" + strconv.Itoa(st.cred.Iterations)
		st.step = 1
		return st.serverFirst, false, nil
	case 1:
		final, err := ParseClientFinal(string(msg))
		if err != nil {
			return "", false, err
		}
		if string(final.ChannelBinding) != st.first.GS2Header || final.Nonce != st.nonce {
			return "", false, fmt.Errorf("%w: channel binding or nonce does not match the exchange", ErrBadResponse)
		}
		authMessage := []byte(st.first.Bare + "," + st.serverFirst + "," + final.WithoutProof)
		var matched *PasswordKey
		for i := range st.cred.Keys {
			k := &st.cred.Keys[i]
			sig := hmacSHA256(k.StoredKey, authMessage)
			clientKey := make([]byte, len(sig))
			for j := range sig {
				clientKey[j] = sig[j] ^ final.Proof[j]
			}
			stored := sha256.Sum256(clientKey)
			if hmac.Equal(stored[:], k.StoredKey) {
				matched = k
			}
		}
		if !st.known || matched == nil {
			return "", false, fmt.Errorf("%w: SCRAM proof for %q matches no client password", ErrRejected, st.first.User)
		}
		if err := v.authorize(st.first.AuthzID, st.first.User, st.cred.DID); err != nil {
			return "", false, err
		}
		st.did = st.cred.DID
		st.step = 2
		return "v=" + base64.StdEncoding.EncodeToString(hmacSHA256(matched.ServerKey, authMessage)), false, nil
	default:
		if len(msg) != 0 {
			return "", false, fmt.Errorf("%w: expected an empty response after server-final", ErrBadResponse)
		}
		return "", true, nil
	}
}

func cryptoRandom(b []byte) error {
	_, err := rand.Read(b)
	return err
}
