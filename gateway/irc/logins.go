package irc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Client passwords: a DID mints named, revocable passwords that ordinary IRC clients use with
// SASL PLAIN or SCRAM-SHA-256 (see gateway/sasl). Only their SCRAM verifiers are replicated
// (fsm.SetClientPassword); the password is shown once, to whoever minted it.
//
// Minting needs a login by ATPROTO-CHALLENGE (or a hosted account, whose only credential is a
// password): a bearer token minted after a password login starts with PasswordTokenPrefix, so
// that REST can tell the two apart on any node, and a session logged in by password cannot mint
// passwords that would outlive the revocation of the one it used.

// PasswordTokenPrefix starts the bearer tokens minted after a password login.
const PasswordTokenPrefix = "pw-"

// Refusals of the password operations. Each carries the HTTP status a REST route answers it
// with (HTTPStatus), so that REST maps them without knowing this package.
var (
	ErrPasswordLogin     = &passwordRefusal{"irc: a password login may not mint client passwords; log in with ATPROTO-CHALLENGE", 403}
	ErrBadPasswordName   = &passwordRefusal{"irc: a password name is 1 to 32 letters, digits, '.', '_' or '-'", 400}
	ErrPasswordExists    = &passwordRefusal{"irc: a client password of that name exists; revoke it first", 409}
	ErrNoSuchPassword    = &passwordRefusal{"irc: no client password of that name", 404}
	ErrTooManyPasswords  = &passwordRefusal{fmt.Sprintf("irc: at most %d client passwords per DID; revoke one first", fsm.MaxClientPasswords), 409}
	ErrPasswordsDisabled = &passwordRefusal{"irc: client passwords are not available on this server", 503}
)

type passwordRefusal struct {
	msg    string
	status int
}

func (e *passwordRefusal) Error() string   { return e.msg }
func (e *passwordRefusal) HTTPStatus() int { return e.status }

// loginCredentials is the sasl.Passwords lookup over the replicated state.
func (s *Server) loginCredentials(login string) (sasl.Credential, bool) {
	var creds fsm.SCRAMCredentials
	var ok bool
	s.state.Read(func(st *fsm.State) { creds, ok = fsm.LoginsOf(st).Credentials(login) })
	if !ok {
		return sasl.Credential{}, false
	}
	out := sasl.Credential{DID: creds.DID, Salt: creds.Salt, Iterations: creds.Iterations}
	for _, v := range creds.Verifiers {
		out.Keys = append(out.Keys, sasl.PasswordKey{Name: v.Name, StoredKey: v.StoredKey, ServerKey: v.ServerKey})
	}
	return out, true
}

// MayMintPasswords reports whether the holder of a bearer token of did may mint client
// passwords: a token from an ATPROTO-CHALLENGE login may, one from a password login only for a
// hosted account.
func (s *Server) MayMintPasswords(token, did string) bool {
	if !strings.HasPrefix(token, PasswordTokenPrefix) {
		return true
	}
	return s.isHostedDID(did)
}

func (s *Server) isHostedDID(did string) bool {
	name, ok := strings.CutPrefix(did, fsm.HostedAccountDID(s.cfg.ServerName, ""))
	if !ok || name == "" {
		return false
	}
	var acct fsm.HostedAccount
	s.state.Read(func(st *fsm.State) { acct, ok = fsm.LoginsOf(st).HostedAccount(name) })
	return ok && acct.DID == did
}

// MintPassword draws a client password named name for did, proposes its verifier and returns
// the password (the only time it exists outside the client that stores it).
func (s *Server) MintPassword(ctx context.Context, did, name string) (string, error) {
	if s.verifier == nil || !s.verifier.PasswordMechanisms() {
		return "", ErrPasswordsDisabled
	}
	if !fsm.ValidPasswordName(name) {
		return "", ErrBadPasswordName
	}
	password, err := sasl.NewPassword()
	if err != nil {
		return "", err
	}
	// A DID's passwords share its salt: use the one in the state, or draw the first. Another
	// node may file a first password with another salt meanwhile; then read it and try again.
	for attempt := 0; attempt < 3; attempt++ {
		var salt []byte
		var iterations int
		var ok bool
		s.state.Read(func(st *fsm.State) { salt, iterations, ok = fsm.LoginsOf(st).Salt(did) })
		if !ok {
			if salt, err = sasl.NewSalt(); err != nil {
				return "", err
			}
			iterations = sasl.DefaultIterations
		}
		stored, server, err := sasl.DeriveKeys(password, salt, iterations)
		if err != nil {
			return "", err
		}
		res, err := s.proposer.Propose(ctx, fsm.SetClientPassword{DID: did, Name: name, Salt: salt, Iterations: iterations,
			StoredKey: stored, ServerKey: server})
		if err != nil {
			return "", fmt.Errorf("irc: filing a client password: %w", err)
		}
		switch res.Code {
		case fsm.OK:
			return password, nil
		case fsm.ErrSaltMismatch:
			continue
		default:
			return "", passwordError(res.Code)
		}
	}
	return "", errors.New("irc: filing a client password: the DID's salt kept changing; try again")
}

// ClientPasswords lists did's client passwords (names and creation times, never verifiers).
func (s *Server) ClientPasswords(did string) []fsm.PasswordInfo {
	var out []fsm.PasswordInfo
	s.state.Read(func(st *fsm.State) { out = fsm.LoginsOf(st).Passwords(did) })
	return out
}

// RevokePassword removes did's client password name: it no longer logs in, on any node.
func (s *Server) RevokePassword(ctx context.Context, did, name string) error {
	res, err := s.proposer.Propose(ctx, fsm.RevokeClientPassword{DID: did, Name: name})
	if err != nil {
		return fmt.Errorf("irc: revoking a client password: %w", err)
	}
	if res.Code != fsm.OK {
		return passwordError(res.Code)
	}
	return nil
}

func passwordError(code fsm.Code) error {
	switch code {
	case fsm.ErrPasswordExists:
		return ErrPasswordExists
	case fsm.ErrNoSuchPassword:
		return ErrNoSuchPassword
	case fsm.ErrTooManyPasswords:
		return ErrTooManyPasswords
	case fsm.ErrInvalid:
		return ErrBadPasswordName
	}
	return fmt.Errorf("irc: client password refused: %s", code)
}

// handlePASSWORD is PASSWORD ADD <name> | LIST | DEL <name>, for an authenticated session.
// Replies are standard replies: NOTE PASSWORD ADDED <name> <password>, NOTE PASSWORD ENTRY
// <name> <created>, NOTE PASSWORD END, NOTE PASSWORD REVOKED <name>, or FAIL PASSWORD <code>.
func handlePASSWORD(c *client, m ircmsg.Message, rb *respBuf) {
	did := c.currentDID()
	if did == "" {
		rb.add(c.failMsg("PASSWORD", "ACCOUNT_REQUIRED", "Log in first (SASL) to manage client passwords"))
		return
	}
	note := func(params ...string) {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTE", Params: append([]string{"PASSWORD"}, params...)})
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 15*time.Second)
	defer cancel()
	sub, name := strings.ToUpper(m.Param(0)), m.Param(1)
	switch {
	case sub == "LIST":
		list := c.s.ClientPasswords(did)
		for _, p := range list {
			note("ENTRY", p.Name, time.UnixMilli(p.CreatedAt).UTC().Format(time.RFC3339), "Client password")
		}
		note("END", strconv.Itoa(len(list))+" client passwords")
		return
	case sub != "ADD" && sub != "DEL":
		rb.add(c.failMsg("PASSWORD", "INVALID_PARAMS", "Usage: PASSWORD ADD <name> | LIST | DEL <name>", m.Param(0)))
		return
	case name == "":
		rb.add(c.numericMsg("461", "PASSWORD", "Not enough parameters"))
		return
	case sub == "ADD" && c.passwordLogin && !c.s.isHostedDID(did):
		rb.add(c.failMsg("PASSWORD", "NEED_STRONGER_LOGIN", "Log in with ATPROTO-CHALLENGE to mint client passwords", name))
		return
	}
	var err error
	if sub == "ADD" {
		var password string
		if password, err = c.s.MintPassword(ctx, did, name); err == nil {
			note("ADDED", name, password, "Client password created; log in with SASL PLAIN or SCRAM-SHA-256 as "+did+" (shown once)")
			return
		}
	} else if err = c.s.RevokePassword(ctx, did, name); err == nil {
		note("REVOKED", name, "Client password revoked")
		return
	}
	code, text := "TEMPORARILY_UNAVAILABLE", upgradingText(err, "The client password could not be changed; try again")
	switch {
	case errors.Is(err, ErrBadPasswordName):
		code, text = "INVALID_PARAMS", "A password name is 1 to 32 letters, digits, '.', '_' or '-'"
	case errors.Is(err, ErrPasswordExists):
		code, text = "PASSWORD_EXISTS", "A client password of that name exists; revoke it first"
	case errors.Is(err, ErrNoSuchPassword):
		code, text = "NO_SUCH_PASSWORD", "No client password of that name"
	case errors.Is(err, ErrTooManyPasswords):
		code, text = "LIMIT_REACHED", "You have the most client passwords allowed; revoke one first"
	}
	rb.add(c.failMsg("PASSWORD", code, text, name))
}
