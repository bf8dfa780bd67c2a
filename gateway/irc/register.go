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
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Accounts for people without a DID (IRCv3 draft/account-registration): REGISTER creates a
// hosted account, whose DID is did:web:<server name>:u:<folded name> (its document is served by
// gateway/discovery at /u/<name>/did.json), stores its password as a client password named
// "account" and logs the connection in. The account name is the connection's nick (the account
// owns it from then on); no e-mail is asked for or kept, so no account waits for VERIFY.

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
	if !v302 || !s.cfg.Registration.BeforeConnect {
		return ""
	}
	return "=before-connect"
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
	switch {
	case !reg.Enabled:
		fail("TEMPORARILY_UNAVAILABLE", "Account registration is disabled on this server")
		return
	case !c.registered.Load() && !reg.BeforeConnect:
		fail("COMPLETE_CONNECTION_REQUIRED", "Complete the connection (NICK, USER, CAP END) before registering")
		return
	case c.currentDID() != "":
		fail("ALREADY_AUTHENTICATED", "You are already logged in")
		return
	}
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
		return
	case fsm.Fold(account) != fsm.Fold(nick):
		fail("ACCOUNT_NAME_MUST_BE_NICK", "The account name must be your current nick")
		return
	case !fsm.ValidAccountName(account):
		fail("BAD_ACCOUNT_NAME", "An account name is 1 to 32 ASCII letters, digits, '_' or '-', starting with a letter")
		return
	case len(password) < reg.MinPassword:
		fail("WEAK_PASSWORD", fmt.Sprintf("The password must have at least %d characters", reg.MinPassword))
		return
	case len(password) > MaxAccountPassword:
		fail("UNACCEPTABLE_PASSWORD", "The password is over 400 bytes")
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
	perHour := reg.PerAddressPerHour
	if !c.s.registrations.allow(addrKey(c.conn.RemoteAddr()), perHour, time.Now()) {
		fail("TEMPORARILY_UNAVAILABLE", "Too many accounts registered from your address; try again later")
		return
	}
	did := fsm.HostedAccountDID(c.s.cfg.ServerName, account)
	cmd := fsm.RegisterAccount{Name: account, DID: did, Salt: salt, Iterations: sasl.DefaultIterations, StoredKey: stored, ServerKey: server}
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
	token, nickOwned, ok := c.logIn(did, "account", rb)
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "REGISTER", Params: []string{"SUCCESS", account,
		"Account created; you are logged in as " + did + " (log in later with SASL PLAIN or SCRAM-SHA-256)"}})
	if nickOwned {
		c.leaveOwnedNick(did, rb)
	}
	if ok {
		c.bearerNotice(token, rb)
	}
}

// handleVERIFY is VERIFY <account> <code>. Registration never waits for a code here.
func handleVERIFY(c *client, m ircmsg.Message, rb *respBuf) {
	switch {
	case !c.s.cfg.Registration.Enabled:
		rb.add(c.failMsg("VERIFY", "TEMPORARILY_UNAVAILABLE", "Account registration is disabled on this server", m.Param(0)))
	case c.currentDID() != "":
		rb.add(c.failMsg("VERIFY", "ALREADY_AUTHENTICATED", "You are already logged in", m.Param(0)))
	default:
		rb.add(c.failMsg("VERIFY", "INVALID_CODE", "No registration of that account awaits a code", m.Param(0)))
	}
}
