package irc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/mail"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Accounts for people without a DID (IRCv3 draft/account-registration): REGISTER creates a
// hosted account, whose DID is did:web:<server name>:u:<folded name> (its document is served by
// gateway/discovery at /u/<name>/did.json), stores its password as a client password named
// "account" and logs the connection in. The account name is the connection's nick (the account
// owns it from then on). With e-mail verification configured (Registration.Email, verify.go),
// REGISTER takes an e-mail address, mails a code to it and creates the account only when VERIFY
// gives that code; the address is used for the code alone and never kept.

const accountRegistrationCap = "draft/account-registration"

// Registration configures REGISTER.
type Registration struct {
	// Enabled offers draft/account-registration and accepts REGISTER.
	Enabled bool
	// BeforeConnect lets a connection register before its IRC registration completes.
	BeforeConnect bool
	// PerAddressPerHour bounds the accounts registered from one client address (an IP, or an
	// IPv6 /64) on this node per hour (at least 1).
	PerAddressPerHour int
	// MinPassword is the shortest password accepted, in bytes (1 to MaxAccountPassword).
	MinPassword int
	// Email, when its relay is configured, requires an e-mail address verified with a code.
	Email EmailVerification
}

// The node's defaults for Registration (its DefaultConfig) and the longest password accepted.
const (
	DefaultRegistrationsPerHour = 3
	DefaultAccountMinPassword   = 8
	MaxAccountPassword          = 400 // keeps a REGISTER line within 512 bytes; PLAIN carries as much (sasl)
	maxRegisterAddrs            = 4096
)

func init() {
	commands["REGISTER"] = handler{fn: handleREGISTER, minParams: 3, preReg: true}
	commands["VERIFY"] = handler{fn: handleVERIFY, minParams: 2, preReg: true}
	commands["PASSWORD"] = handler{fn: handlePASSWORD, minParams: 1}
	// No bit: CAP REQ of it is acknowledged; whether it is offered, and its value, is each
	// server's (capLSLines).
	capNames[accountRegistrationCap] = 0
}

// capLSLines is capLSLines with this server's SASL mechanisms and account registration, and
// cap-notify last when the list fits on one line with it (capNotifyCap).
func (s *Server) capLSLines(v302 bool, budget int) []string {
	names := capLS(v302)
	kept := names[:0]
	for _, n := range names {
		switch {
		case n == "sasl=ATPROTO-CHALLENGE":
			n = "sasl=" + s.verifier.Mechanisms()
		case n == accountRegistrationCap && !s.cfg.Registration.Enabled:
			continue
		case strings.HasPrefix(n, metadata3Cap) && !s.cfg.Metadata3:
			continue
		case n == accountRegistrationCap:
			n += s.registrationCapValue(v302)
		}
		kept = append(kept, n)
	}
	if len(strings.Join(kept, " "))+1+len(capNotifyCap) <= budget {
		kept = append(kept, capNotifyCap)
	}
	return fillCapLSLines(kept, v302, budget)
}

// capsOffered reports whether every capability a CAP REQ list names is one this server offers:
// draft/account-registration and draft/metadata-3 only when configured.
func (s *Server) capsOffered(list string) bool {
	for _, name := range strings.Fields(list) {
		switch strings.ToLower(strings.TrimPrefix(name, "-")) {
		case accountRegistrationCap:
			if !s.cfg.Registration.Enabled {
				return false
			}
		case metadata3Cap:
			if !s.cfg.Metadata3 {
				return false
			}
		}
	}
	return true
}

func (s *Server) registrationCapValue(v302 bool) string {
	var values []string
	if s.cfg.Registration.BeforeConnect {
		values = append(values, "before-connect")
	}
	if s.cfg.Registration.Email.Configured() {
		values = append(values, "email-required")
	}
	if !v302 || len(values) == 0 {
		return ""
	}
	return "=" + strings.Join(values, ",")
}

// registerGuard counts registrations per client address.
type registerGuard struct {
	// lock tier 9 (leaf)
	mu     sync.Mutex
	byAddr map[string]*rate.Limiter
}

// allow takes one registration for addr at now, if the address has one left.
func (g *registerGuard) allow(addr string, perHour int, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byAddr == nil {
		g.byAddr = map[string]*rate.Limiter{}
	}
	l := g.byAddr[addr]
	if l == nil {
		if len(g.byAddr) >= maxRegisterAddrs {
			for k, old := range g.byAddr {
				if old.TokensAt(now) >= float64(perHour) {
					delete(g.byAddr, k)
				}
			}
			if len(g.byAddr) >= maxRegisterAddrs {
				return false
			}
		}
		l = rate.NewLimiter(rate.Every(time.Hour/time.Duration(perHour)), perHour)
		g.byAddr[addr] = l
	}
	return l.AllowN(now, 1)
}

// handleREGISTER is REGISTER <account> <email> <password>.
func handleREGISTER(c *client, m ircmsg.Message, rb *respBuf) {
	account, password := m.Param(0), m.Param(2)
	fail := func(code, text string) { rb.add(c.failMsg("REGISTER", code, text, account)) }
	reg := c.s.cfg.Registration
	if !c.mayRegister(fail) {
		return
	}
	account, ok := c.accountName(account, fail)
	if !ok {
		return
	}
	email := m.Param(1)
	switch {
	case len(password) < reg.MinPassword:
		fail("WEAK_PASSWORD", fmt.Sprintf("The password must have at least %d characters", reg.MinPassword))
		return
	case len(password) > MaxAccountPassword:
		fail("UNACCEPTABLE_PASSWORD", "The password is over 400 bytes")
		return
	case reg.Email.Configured() && !mail.ValidAddress(email):
		fail("INVALID_EMAIL", "A valid e-mail address is required: a code to finish the registration is sent to it")
		return
	case reg.Email.Configured() && c.s.verifications.heldByOther(account, c.id, c.s.cfg.Now()):
		fail("ACCOUNT_EXISTS", "A registration of that account awaits its code")
		return
	}
	var taken bool
	c.s.state.Read(func(st *fsm.State) {
		_, exists := fsm.LoginsOf(st).HostedAccount(account)
		holder, held := st.SessionByNick(account)
		taken = exists || st.NickOwner(fsm.Fold(account)) != "" || (held && holder.ID != c.id)
	})
	if taken {
		fail("ACCOUNT_EXISTS", "That account name is taken")
		return
	}
	salt, err := sasl.NewSalt()
	if err != nil {
		fail("TEMPORARILY_UNAVAILABLE", "Registration failed; try again")
		return
	}
	stored, server, err := sasl.DeriveKeys(password, salt, sasl.DefaultIterations)
	if errors.Is(err, sasl.ErrBadPassword) {
		fail("UNACCEPTABLE_PASSWORD", "The password has characters that cannot be used (SASLprep)")
		return
	} else if err != nil {
		fail("TEMPORARILY_UNAVAILABLE", "Registration failed; try again")
		return
	}
	if !c.s.registrations.allow(addrKey(c.conn.RemoteAddr()), reg.PerAddressPerHour, time.Now()) {
		fail("TEMPORARILY_UNAVAILABLE", "Too many accounts registered from your address; try again later")
		return
	}
	cmd := fsm.RegisterAccount{Name: account, DID: fsm.HostedAccountDID(c.s.cfg.ServerName, account), Salt: salt,
		Iterations: sasl.DefaultIterations, StoredKey: stored, ServerKey: server}
	if reg.Email.Configured() {
		c.mailCode(rb, cmd, email, fail)
		return
	}
	c.createAccount(rb, cmd, "REGISTER", fail)
}

// mayRegister reports whether the connection may send REGISTER or VERIFY now.
func (c *client) mayRegister(fail func(code, text string)) bool {
	reg := c.s.cfg.Registration
	switch {
	case !reg.Enabled:
		fail("TEMPORARILY_UNAVAILABLE", "Account registration is disabled on this server")
		return false
	case !c.registered.Load() && !reg.BeforeConnect:
		fail("COMPLETE_CONNECTION_REQUIRED", "Complete the connection (NICK, USER, CAP END) first")
		return false
	case c.currentDID() != "":
		fail("ALREADY_AUTHENTICATED", "You are already logged in")
		return false
	}
	return true
}

// accountName checks the account name of REGISTER or VERIFY ("*": the nick) for the connection:
// it must be the connection's nick (or the nick it asked for, held by another connection) and a
// valid account name.
func (c *client) accountName(account string, fail func(code, text string)) (string, bool) {
	nick := c.nick
	if nick == "" {
		nick = c.refusedNick // asked for, but held by another connection: no land grab
	}
	if account == "*" {
		account = nick
	}
	switch {
	case nick == "":
		fail("NEED_NICK", "Choose a nick (NICK) first: the account is named after it")
		return "", false
	case fsm.Fold(account) != fsm.Fold(nick):
		fail("ACCOUNT_NAME_MUST_BE_NICK", "The account name must be your current nick")
		return "", false
	case !fsm.ValidAccountName(account):
		fail("BAD_ACCOUNT_NAME", "An account name is 1 to 32 ASCII letters, digits, '_' or '-', starting with a letter")
		return "", false
	}
	return account, true
}

// createAccount proposes the account, logs the connection in and answers SUCCESS to command
// (REGISTER, or VERIFY once the code was given); fail answers a refusal.
func (c *client) createAccount(rb *respBuf, cmd fsm.RegisterAccount, command string, fail func(code, text string)) {
	if c.registered.Load() {
		cmd.Session = c.id
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 15*time.Second)
	defer cancel()
	res, err := c.s.proposer.Propose(ctx, cmd)
	switch {
	case err != nil:
		fail("TEMPORARILY_UNAVAILABLE", upgradingText(err, "Registration failed; try again"))
		return
	case res.Code == fsm.ErrAccountExists:
		fail("ACCOUNT_EXISTS", "That account name is taken")
		return
	case res.Code == fsm.ErrInvalid:
		fail("BAD_ACCOUNT_NAME", "That account name cannot be registered")
		return
	case res.Code != fsm.OK:
		fail("TEMPORARILY_UNAVAILABLE", "No more accounts can be registered now")
		return
	}
	did := cmd.DID
	token, nickOwned, ok := c.logIn(did, "account", rb)
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: command, Params: []string{"SUCCESS", cmd.Name,
		"Account created; you are logged in as " + did + " (log in later with SASL PLAIN or SCRAM-SHA-256)"}})
	if nickOwned {
		c.leaveOwnedNick(did, rb)
	}
	if ok {
		c.bearerNotice(token, rb)
		c.rejoin(rb) // follows the new account from now on (nothing to join yet)
	}
}
