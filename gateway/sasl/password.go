package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/stringprep"
)

// The password mechanisms.
const (
	MechPlain = "PLAIN"
	MechSCRAM = "SCRAM-SHA-256"
)

// Parameters of new client passwords and their verifiers.
const (
	DefaultIterations = 4096 // RFC 7677's minimum; every verifier of a DID shares its count
	SaltBytes         = 16
	passwordBytes     = 20  // 160 random bits, 32 base32 characters
	maxPlainField     = 400 // RFC 4616: at least 255 bytes must be accepted; REGISTER takes passwords up to 400
)

// ErrBadPassword is returned for a password that SASLprep refuses or that prepares to nothing.
var ErrBadPassword = errors.New("sasl: password is empty or has characters SASLprep prohibits")

// Credential is what a password login is checked against: the DID a login name leads to, the
// SCRAM salt and iteration count it shares across its client passwords, and the verifier of each.
type Credential struct {
	DID        string
	Salt       []byte
	Iterations int
	Keys       []PasswordKey
}

// PasswordKey is one client password's SCRAM-SHA-256 verifier.
type PasswordKey struct {
	Name      string
	StoredKey []byte
	ServerKey []byte
}

// Passwords resolves a login name (a DID, a hosted account's name or a nick owned by a DID) to
// its credential; ok is false when the name leads to no DID with a client password.
type Passwords func(login string) (c Credential, ok bool)

// NewPassword draws a client password: 160 random bits as 32 lowercase base32 characters.
func NewPassword() (string, error) {
	var b [passwordBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sasl: drawing a password: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])), nil
}

// NewSalt draws a SCRAM salt.
func NewSalt() ([]byte, error) {
	b := make([]byte, SaltBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("sasl: drawing a salt: %w", err)
	}
	return b, nil
}

// DeriveKeys computes the SCRAM-SHA-256 verifier of password (RFC 5802 section 3): the password
// is prepared with SASLprep, SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, iterations),
// StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key").
func DeriveKeys(password string, salt []byte, iterations int) (storedKey, serverKey []byte, err error) {
	prepared, err := stringprep.SASLprep.Prepare(password)
	if err != nil || prepared == "" {
		return nil, nil, ErrBadPassword
	}
	salted, err := pbkdf2.Key(sha256.New, prepared, salt, iterations, sha256.Size)
	if err != nil {
		return nil, nil, fmt.Errorf("sasl: deriving the salted password: %w", err)
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	return stored[:], hmacSHA256(salted, []byte("Server Key")), nil
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// matchStoredKey returns the key whose StoredKey equals stored, comparing with every key in
// constant time.
func matchStoredKey(keys []PasswordKey, stored []byte) (PasswordKey, bool) {
	var found PasswordKey
	ok := false
	for _, k := range keys {
		if subtle.ConstantTimeCompare(k.StoredKey, stored) == 1 {
			found, ok = k, true
		}
	}
	return found, ok
}

// Plain is a decoded PLAIN message (RFC 4616): [authzid] NUL authcid NUL passwd.
type Plain struct {
	AuthzID  string
	AuthcID  string
	Password string
}

// ParsePlain decodes a PLAIN message. It refuses anything but exactly three fields, an empty
// authcid or password, a field over 400 bytes and text that is not UTF-8.
func ParsePlain(msg []byte) (Plain, error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return Plain{}, fmt.Errorf("%w: PLAIN message has %d NUL-separated fields, want 3", ErrBadResponse, len(parts))
	}
	for _, p := range parts {
		if len(p) > maxPlainField || !utf8.ValidString(p) {
			return Plain{}, fmt.Errorf("%w: PLAIN field over %d bytes or not UTF-8", ErrBadResponse, maxPlainField)
		}
	}
	if parts[1] == "" || parts[2] == "" {
		return Plain{}, fmt.Errorf("%w: PLAIN authcid or password is empty", ErrBadResponse)
	}
	return Plain{AuthzID: parts[0], AuthcID: parts[1], Password: parts[2]}, nil
}

// checkPassword verifies password against the credential of login. An unknown login costs the
// same key derivation as a known one. It returns the DID and the name of the password that matched.
func (v *Verifier) checkPassword(login, password string) (did, name string, err error) {
	cred, known := v.credential(login)
	stored, _, err := DeriveKeys(password, cred.Salt, cred.Iterations)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrRejected, err)
	}
	key, ok := matchStoredKey(cred.Keys, stored)
	if !known || !ok {
		return "", "", fmt.Errorf("%w: no client password of %q matches", ErrRejected, login)
	}
	return cred.DID, key.Name, nil
}

// credential looks login up. For an unknown login it returns a stand-in with a salt derived
// from the login and a per-process secret, so that neither the salt a SCRAM exchange announces
// nor the work done tells whether the login exists.
func (v *Verifier) credential(login string) (Credential, bool) {
	if v.Passwords != nil {
		if c, ok := v.Passwords(login); ok && len(c.Keys) > 0 {
			return c, true
		}
	}
	v.decoyOnce.Do(func() {
		v.decoyKey = make([]byte, 32)
		if _, err := rand.Read(v.decoyKey); err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
	})
	return Credential{Salt: hmacSHA256(v.decoyKey, []byte(login))[:SaltBytes], Iterations: DefaultIterations}, false
}

// authorize checks the authorization identity of a password login: empty, the login itself,
// or a name that leads to the same DID.
func (v *Verifier) authorize(authzid, login, did string) error {
	if authzid == "" || authzid == login || authzid == did {
		return nil
	}
	if c, ok := v.credential(authzid); ok && c.DID == did {
		return nil
	}
	return fmt.Errorf("%w: %q may not act as %q", ErrRejected, login, authzid)
}

// PasswordMechanisms reports whether PLAIN and SCRAM-SHA-256 are offered.
func (v *Verifier) PasswordMechanisms() bool { return v != nil && v.Passwords != nil }

// Mechanisms is the comma-separated list of offered mechanisms (for sasl= and RPL_SASLMECHS).
func (v *Verifier) Mechanisms() string {
	if v.PasswordMechanisms() {
		return Mechanism + "," + MechPlain + "," + MechSCRAM
	}
	return Mechanism
}
