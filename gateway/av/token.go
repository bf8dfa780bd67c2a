package av

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TokenTTL is how long a signalling token opens the signalling WebSocket.
const TokenTTL = 2 * time.Minute

// maxTokenLen bounds a token before it is decoded.
const maxTokenLen = 2048

// Claims are what a signalling token grants: Account may join call Call of Channel until Exp.
type Claims struct {
	Call    string `json:"call"`
	Channel string `json:"channel"`
	Account string `json:"did"`
	Issuer  string `json:"iss"` // the minting node's DID
	KID     string `json:"kid"` // its server key
	Exp     int64  `json:"exp"` // unix seconds
	Nonce   string `json:"nonce"`
}

// Keys signs with this node's server key and checks signatures of any node of the cluster.
type Keys interface {
	// Issuer names this node (its DID) and its server key.
	Issuer() (issuer, kid string)
	// Sign signs msg with this node's server key.
	Sign(msg []byte) []byte
	// Verify checks sig over msg against the replicated public key kid of issuer.
	Verify(issuer, kid string, msg, sig []byte) bool
}

// Token errors.
var (
	ErrTokenMalformed = errors.New("the token is malformed")
	ErrTokenSignature = errors.New("the token's signature does not verify")
	ErrTokenExpired   = errors.New("the token has expired")
)

var b64 = base64.RawURLEncoding

// mintToken signs claims for account in call.
func mintToken(keys Keys, call, channel, account string, now time.Time) (string, Claims, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", Claims{}, fmt.Errorf("token nonce: %w", err)
	}
	cl := Claims{Call: call, Channel: channel, Account: account, Exp: now.Add(TokenTTL).Unix(), Nonce: b64.EncodeToString(nonce[:])}
	cl.Issuer, cl.KID = keys.Issuer()
	body, err := json.Marshal(cl)
	if err != nil {
		return "", Claims{}, fmt.Errorf("token claims: %w", err)
	}
	return b64.EncodeToString(body) + "." + b64.EncodeToString(keys.Sign(body)), cl, nil
}

// parseToken checks a token's form, signature and expiry and returns its claims.
func parseToken(keys Keys, token string, now time.Time) (Claims, error) {
	if len(token) == 0 || len(token) > maxTokenLen {
		return Claims{}, ErrTokenMalformed
	}
	bodyPart, sigPart, ok := strings.Cut(token, ".")
	if !ok {
		return Claims{}, ErrTokenMalformed
	}
	body, err1 := b64.DecodeString(bodyPart)
	sig, err2 := b64.DecodeString(sigPart)
	if err1 != nil || err2 != nil {
		return Claims{}, ErrTokenMalformed
	}
	var cl Claims
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cl); err != nil || cl.Call == "" || cl.Account == "" || cl.Issuer == "" || cl.Channel == "" {
		return Claims{}, ErrTokenMalformed
	}
	if !keys.Verify(cl.Issuer, cl.KID, body, sig) {
		return Claims{}, ErrTokenSignature
	}
	if now.Unix() >= cl.Exp {
		return Claims{}, ErrTokenExpired
	}
	return cl, nil
}
