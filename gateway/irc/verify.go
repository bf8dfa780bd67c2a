package irc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/mail"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// E-mail verification of account registrations (draft/account-registration's email-required):
// with a relay configured, REGISTER <account> <email> <password> mails a code to the address and
// answers REGISTER VERIFICATION_REQUIRED; VERIFY <account> <code> then creates the account and
// logs the connection in, as REGISTER does without verification. A registration awaiting its
// code is kept by the node that mailed it, in memory (the account's keys, derived from the
// password, and the code's hash; never the password or the address), until the code expires or
// too many wrong codes were given; VERIFY is therefore sent to that node, on the connection that
// registered or a later one using the account's name as its nick.

// EmailVerification configures the codes of registrations by e-mail.
type EmailVerification struct {
	// Relay sends the codes; registration needs no e-mail while it is not configured.
	Relay mail.Config
	// CodeTTL is how long a code stays valid (DefaultCodeTTL when 0).
	CodeTTL time.Duration
	// MaxAttempts is how many wrong codes end a pending registration (DefaultCodeAttempts when 0).
	MaxAttempts int
}

// Defaults and bounds of e-mail verification.
const (
	DefaultCodeTTL      = 30 * time.Minute
	DefaultCodeAttempts = 5
	codeDigits          = 8
	maxPendingAccounts  = 1024 // registrations awaiting a code on one node
)

// Configured reports whether registrations need a verified e-mail address.
func (e EmailVerification) Configured() bool { return e.Relay.Configured() }

func (e EmailVerification) ttl() time.Duration {
	if e.CodeTTL > 0 {
		return e.CodeTTL
	}
	return DefaultCodeTTL
}

func (e EmailVerification) attempts() int {
	if e.MaxAttempts > 0 {
		return e.MaxAttempts
	}
	return DefaultCodeAttempts
}

// pendingAccount is a registration awaiting its code.
type pendingAccount struct {
	cmd      fsm.RegisterAccount // the account to create (Session is set at VERIFY)
	conn     string              // the connection that registered
	code     [sha256.Size]byte   // hash of the code
	expires  time.Time
	attempts int // wrong codes given
}

// pendingAccounts are the registrations awaiting a code on this node, by folded account name.
type pendingAccounts struct {
	// lock tier 9 (leaf)
	mu sync.Mutex
	m  map[string]*pendingAccount
}

// dropExpired forgets the expired registrations; the caller holds p.mu.
func (p *pendingAccounts) dropExpired(now time.Time) {
	for k, pa := range p.m {
		if !now.Before(pa.expires) {
			delete(p.m, k)
		}
	}
}

// heldByOther reports whether another connection's registration of account awaits its code.
func (p *pendingAccounts) heldByOther(account, conn string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pa := p.m[fsm.Fold(account)]
	return pa != nil && pa.conn != conn && now.Before(pa.expires)
}

// put keeps a registration awaiting code, replacing an earlier one of the same account; false
// when the node holds as many as it may.
func (p *pendingAccounts) put(pa *pendingAccount, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*pendingAccount{}
	}
	key := fsm.Fold(pa.cmd.Name)
	if _, ok := p.m[key]; !ok && len(p.m) >= maxPendingAccounts {
		p.dropExpired(now)
		if len(p.m) >= maxPendingAccounts {
			return false
		}
	}
	p.m[key] = pa
	return true
}

// drop forgets pa if it is still the account's pending registration.
func (p *pendingAccounts) drop(pa *pendingAccount) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if key := fsm.Fold(pa.cmd.Name); p.m[key] == pa {
		delete(p.m, key)
	}
}

// Outcomes of a code given for a pending registration.
var (
	errNoPending       = errors.New("no registration of that account awaits a code")
	errWrongCode       = errors.New("wrong code")
	errTooManyAttempts = errors.New("too many wrong codes")
)

// take checks code against account's pending registration: the registration is handed over
// (and forgotten) when it matches; a wrong code counts, and the last allowed one forgets it.
func (p *pendingAccounts) take(account, code string, maxAttempts int, now time.Time) (*pendingAccount, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := fsm.Fold(account)
	pa := p.m[key]
	if pa == nil || !now.Before(pa.expires) {
		delete(p.m, key)
		return nil, errNoPending
	}
	sum := sha256.Sum256([]byte(code))
	if subtle.ConstantTimeCompare(sum[:], pa.code[:]) == 1 {
		delete(p.m, key)
		return pa, nil
	}
	pa.attempts++
	if pa.attempts >= maxAttempts {
		delete(p.m, key)
		return nil, errTooManyAttempts
	}
	return nil, errWrongCode
}

// newCode is a random code of codeDigits decimal digits.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		return "", fmt.Errorf("verification code: %w", err)
	}
	return fmt.Sprintf("%0*d", codeDigits, n.Int64()), nil
}

// mailCode mails a code for the registration cmd to email, keeps the registration until VERIFY
// gives the code and answers REGISTER VERIFICATION_REQUIRED.
func (c *client) mailCode(rb *respBuf, cmd fsm.RegisterAccount, email string, fail func(code, text string)) {
	ev := c.s.cfg.Registration.Email
	code, err := newCode()
	if err != nil {
		fail("TEMPORARILY_UNAVAILABLE", "Registration failed; try again")
		return
	}
	now := c.s.cfg.Now()
	pa := &pendingAccount{cmd: cmd, conn: c.id, code: sha256.Sum256([]byte(code)), expires: now.Add(ev.ttl())}
	if !c.s.verifications.put(pa, now) {
		fail("TEMPORARILY_UNAVAILABLE", "Too many registrations await their code; try again later")
		return
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 30*time.Second)
	defer cancel()
	subject := fmt.Sprintf("Your %s account %s: verification code", c.s.cfg.Network, cmd.Name)
	body := fmt.Sprintf("Someone, probably you, asked to register the account %s on %s with this address.\n\n"+
		"Your verification code is %s. To finish the registration, send on IRC:\n\n    /quote VERIFY %s %s\n\n"+
		"The code expires in %s. If you did not ask for it, ignore this message: no account is created without the code.\n",
		cmd.Name, c.s.cfg.Network, code, cmd.Name, code, ev.ttl().Round(time.Minute))
	if err := ev.Relay.Send(ctx, email, subject, body); err != nil {
		c.s.verifications.drop(pa) // the code never left
		c.s.log.Warn("verification e-mail not sent", "account", cmd.Name, "err", err)
		if errors.Is(err, mail.ErrRejected) {
			fail("UNACCEPTABLE_EMAIL", "The mail server refused that address")
			return
		}
		fail("TEMPORARILY_UNAVAILABLE", "The verification e-mail could not be sent; try again later")
		return
	}
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "REGISTER", Params: []string{"VERIFICATION_REQUIRED", cmd.Name,
		fmt.Sprintf("A verification code was sent to %s; finish with VERIFY %s <code> within %s", email, cmd.Name, ev.ttl().Round(time.Minute))}})
}

// handleVERIFY is VERIFY <account> <code>.
func handleVERIFY(c *client, m ircmsg.Message, rb *respBuf) {
	account := m.Param(0)
	fail := func(code, text string) { rb.add(c.failMsg("VERIFY", code, text, account)) }
	reg := c.s.cfg.Registration
	if !c.mayRegister(fail) {
		return
	}
	if !reg.Email.Configured() {
		fail("INVALID_CODE", "No registration of that account awaits a code")
		return
	}
	account, ok := c.accountName(account, fail)
	if !ok {
		return
	}
	pa, err := c.s.verifications.take(account, m.Param(1), reg.Email.attempts(), c.s.cfg.Now())
	switch {
	case errors.Is(err, errWrongCode):
		fail("INVALID_CODE", "That is not the code that was sent")
		return
	case errors.Is(err, errTooManyAttempts):
		fail("INVALID_CODE", "Too many wrong codes: register again for a new one")
		return
	case err != nil:
		fail("INVALID_CODE", "No registration of that account awaits a code (it may have expired)")
		return
	}
	c.createAccount(rb, pa.cmd, "VERIFY", fail)
}
