package irc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
)

func handleCAP(c *client, m ircmsg.Message, rb *respBuf) {
	sub := strings.ToUpper(m.Param(0))
	reply := func(params ...string) {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "CAP", Params: append([]string{c.displayNick()}, params...)})
	}
	switch sub {
	case "LS":
		if !c.registered.Load() {
			c.capBusy = true
		}
		if m.Param(1) >= "302" {
			c.cap302 = true
			c.setCaps(capCapNotify, 0) // implied by 302 (capNotifyCap)
		}
		lines := c.s.capLSLines(c.cap302, capLSBudget(c.s.cfg.ServerName, c.displayNick()))
		for i, line := range lines {
			if i < len(lines)-1 {
				reply("LS", "*", line)
			} else {
				reply("LS", line)
			}
		}
	case "LIST":
		reply("LIST", c.capBits().names())
	case "REQ":
		if !c.registered.Load() {
			c.capBusy = true
		}
		list := m.Param(1)
		add, remove, ok := parseCapReq(list)
		// A CAP LS 302 client may not turn cap-notify off.
		if !ok || strings.TrimSpace(list) == "" || !c.s.capsOffered(list) || (c.cap302 && remove&capCapNotify != 0) {
			reply("NAK", list)
			return
		}
		c.setCaps(add, remove)
		reply("ACK", list)
		if add&capAnyMetadata != 0 && c.registered.Load() {
			c.ownMetadata(rb)
		}
	case "END":
		if c.registered.Load() {
			return
		}
		c.capBusy = false
		c.tryRegister(rb)
	default:
		rb.add(c.numericMsg("410", m.Param(0), "Invalid CAP command"))
	}
}

// setCaps turns the capabilities add on and remove off.
func (c *client) setCaps(add, remove capBits) {
	for {
		old := c.caps.Load()
		next := (old | uint32(add)) &^ uint32(remove)
		if c.caps.CompareAndSwap(old, next) {
			return
		}
	}
}

func handleNICK(c *client, m ircmsg.Message, rb *respBuf) {
	nick := m.Param(0)
	if nick == "" {
		rb.add(c.numericMsg("431", "No nickname given"))
		return
	}
	if c.refuseNick(nick, rb) {
		return
	}
	if !c.registered.Load() {
		var inUse bool
		did := c.currentDID()
		c.s.state.Read(func(st *fsm.State) {
			holder, held := st.SessionByNick(nick)
			// Another session of the same account holding it: registration gives this one a
			// nick derived from it (tryRegister), not 433.
			inUse = held && (did == "" || holder.DID != did)
		})
		if inUse {
			c.refusedNick = nick // REGISTER * names the account after it (register.go)
			rb.add(c.numericMsg("433", nick, "Nickname is already in use"))
			return
		}
		c.nick = nick
		c.tryRegister(rb)
		return
	}
	res, err := c.propose(fsm.ChangeNick{Session: c.id, Nick: nick})
	if err != nil {
		rb.add(c.failMsg("NICK", "TEMPORARILY_UNAVAILABLE", "The nick could not be changed; try again"))
		return
	}
	switch res.Code {
	case fsm.OK:
		c.nick = nick
	case fsm.NoChange:
	case fsm.ErrNickInUse:
		rb.add(c.numericMsg("433", nick, "Nickname is already in use"))
	case fsm.ErrNickOwned:
		rb.add(c.numericMsg("433", nick, "Nickname is registered to another identity"))
	default:
		rb.add(c.numericMsg("432", nick, "Erroneous nickname"))
	}
}

func handleUSER(c *client, m ircmsg.Message, rb *respBuf) {
	if c.registered.Load() {
		rb.add(c.numericMsg("462", "You may not reregister"))
		return
	}
	if m.Param(0) == "" || m.Param(3) == "" {
		rb.add(c.numericMsg("461", "USER", "Not enough parameters"))
		return
	}
	c.user = sanitizeUser(m.Param(0))
	c.realname = m.Param(3)
	if len(c.realname) > 128 {
		c.realname = c.realname[:128]
	}
	c.tryRegister(rb)
}

func handlePING(c *client, m ircmsg.Message, rb *respBuf) {
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "PONG", Params: []string{c.s.cfg.ServerName, m.Param(0)}})
}

func handlePONG(*client, ircmsg.Message, *respBuf) {}

func handleQUIT(c *client, m ircmsg.Message, rb *respBuf) {
	reason := "Quit"
	if t := m.Param(0); t != "" {
		reason = "Quit: " + truncate(t, 300)
	}
	c.quit, c.quitReason = true, reason
	rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"Closing Link: " + c.host + " (" + reason + ")"}})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}

// tryRegister completes registration once NICK and USER are in and CAP negotiation is over.
func (c *client) tryRegister(rb *respBuf) {
	if c.registered.Load() || c.nick == "" || c.user == "" || c.capBusy {
		return
	}
	if !c.passwordAccepted(rb) {
		return
	}
	did := c.currentDID()
	if did == "" && c.s.cfg.NoGuests {
		rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"This server requires authentication (guest connections disabled)"}})
		c.quit, c.quitReason = true, "Authentication required"
		return
	}
	c.authMu.Lock()
	tokenHash := c.tokenHash
	c.authMu.Unlock()
	nick := c.nick
	for attempt := 0; attempt < 8; attempt++ {
		res, err := c.propose(fsm.RegisterSession{
			ID: c.id, Node: c.s.cfg.NodeName, Incarnation: c.s.cfg.Incarnation, Nick: nick, User: c.user,
			Host: c.host, Realname: c.realname, DID: did, TokenHash: tokenHash, Oper: c.oper, Secure: c.secure,
		})
		if err != nil {
			rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"Registration failed: the server is unavailable"}})
			c.quit, c.quitReason = true, "Registration failed"
			return
		}
		switch res.Code {
		case fsm.OK:
			c.nick = nick
			c.completeRegistration(rb, did, tokenHash)
			c.rejoin(rb)
			return
		case fsm.ErrNickInUse:
			if did != "" && c.siblingHolds(nick, did) {
				// The same account's other connection (another device, or a connection not yet
				// reaped) has it: this one takes a nick derived from it, as for a nick owned
				// by another identity, instead of a 433 that leaves the client unregistered.
				wanted := c.nick
				nick = derivedNick(wanted, did, attempt)
				rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{"*", fmt.Sprintf("%s is in use by another connection of your account. You are %s.", wanted, nick)}})
				continue
			}
			if nick == c.nick {
				rb.add(c.numericMsg("433", nick, "Nickname is already in use"))
				c.nick = ""
				return
			}
		case fsm.ErrNickOwned:
			wanted := nick
			if did == "" {
				nick = guestNick()
				rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{"*", fmt.Sprintf("Nick %s is registered — renamed to %s. Authenticate to reclaim.", wanted, nick)}})
			} else {
				nick = derivedNick(wanted, did, attempt)
				rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{"*", fmt.Sprintf("%s is registered to another identity. You are %s (tied to your account).", wanted, nick)}})
			}
			continue
		default:
			rb.add(c.numericMsg("432", nick, "Erroneous nickname"))
			c.nick = ""
			return
		}
		nick = guestNick()
	}
	rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"Could not find a free nickname"}})
	c.quit, c.quitReason = true, "Registration failed"
}

// siblingHolds reports whether nick belongs to another session authenticated as did.
func (c *client) siblingHolds(nick, did string) bool {
	var same bool
	c.s.state.Read(func(st *fsm.State) {
		holder, held := st.SessionByNick(nick)
		same = held && holder.ID != c.id && holder.DID == did
	})
	return same
}

func guestNick() string {
	n, err := rand.Int(rand.Reader, big.NewInt(100000))
	if err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return fmt.Sprintf("Guest%d", n.Int64())
}

// derivedNick is the deterministic nick given to a DID user whose chosen nick belongs to another
// DID: the nick plus a few hex digits of the DID's hash (more on each retry).
func derivedNick(nick, did string, attempt int) string {
	sum := sha256.Sum256([]byte(did))
	suffix := hex.EncodeToString(sum[:])[:4+attempt]
	if len(nick) > 64-len(suffix)-1 {
		nick = truncate(nick, 64-len(suffix)-1)
	}
	return nick + "-" + suffix
}

func (c *client) completeRegistration(rb *respBuf, did, tokenHash string) {
	s := c.s
	s.mu.Lock()
	s.addClient(c)
	if tokenHash != "" && s.pending[tokenHash] == c {
		delete(s.pending, tokenHash)
	}
	s.mu.Unlock()
	c.registered.Store(true)
	who := "(guest)"
	if did != "" {
		who = "(authenticated as " + did + ")"
	}
	srv := s.cfg.ServerName
	rb.add(c.numericMsg("001", fmt.Sprintf("Welcome to %s, %s %s", s.cfg.Network, c.nick, who)))
	rb.add(c.numericMsg("002", fmt.Sprintf("Your host is %s, running palaver-%s", srv, s.cfg.Version)))
	rb.add(c.numericMsg("003", "This server was started "+s.started.UTC().Format("2006-01-02 15:04:05 UTC")))
	rb.add(c.numericMsg("004", srv, "palaver-"+s.cfg.Version, userModes, "bhiIkmnotvE", "bhIkov"))
	for _, chunk := range s.isupport {
		params := append(strings.Fields(chunk), "are supported by this server")
		rb.add(c.numericMsg("005", params...))
	}
	c.lusers(rb)
	c.motd(rb)
	c.applyPreMetadata(rb)
	c.ownMetadata(rb)
	if c.oper {
		rb.add(ircmsg.Message{Source: srv, Command: "MODE", Params: []string{c.nick, "+o"}})
	}
}

// handleAUTHENTICATE runs the SASL ATPROTO-CHALLENGE conversation.
func handleAUTHENTICATE(c *client, m ircmsg.Message, rb *respBuf) {
	if c.saslLocked {
		return
	}
	ctx, cancel := context.WithTimeout(keyresolver.WithClientAddr(c.s.ctx, c.conn.RemoteAddr()), 20*time.Second)
	defer cancel()
	res := c.sasl.Handle(ctx, m.Param(0), c.s.cfg.Now())
	fail := func(text string) { rb.add(c.numericMsg("904", text)) }
	switch res.Outcome {
	case sasl.OutcomeChallenge:
		rb.add(ircmsg.Message{Command: "AUTHENTICATE", Params: []string{res.Payload}})
	case sasl.OutcomeContinue, sasl.OutcomeIgnored:
	case sasl.OutcomeSuccess:
		c.saslSuccess(res.DID, res.Method, rb)
	case sasl.OutcomeTooLong:
		rb.add(c.numericMsg("905", res.Text))
	case sasl.OutcomeFailure:
		if res.Counted {
			c.countSASL("failure")
		}
		fail(res.Text)
	case sasl.OutcomeAborted:
		fail(res.Text)
	case sasl.OutcomeUnknownMechanism:
		rb.add(c.numericMsg("908", res.Payload, "are available SASL mechanisms"))
		fail(res.Text)
	case sasl.OutcomeTooManyFailures:
		c.countSASL("failure")
		fail(res.Text)
		rb.add(ircmsg.Message{Command: "ERROR", Params: []string{"Too many SASL failures"}})
		c.saslLocked = true
		c.quit, c.quitReason = true, "Too many SASL failures"
	}
}

func (c *client) countSASL(result string) {
	if m := c.s.cfg.Metrics; m != nil {
		m.SASL.WithLabelValues(result).Inc()
	}
}

// saslSuccess logs the connection in: 900 and 903, then the bearer NOTICE. A client-password
// login on a registered connection (SASL re-authentication) gets no NOTICE: the IRC clients that
// re-authenticate expect 900 and 903 alone and may start the next AUTHENTICATE right after, and
// the bearer comes with the login of a new connection. A nick that belongs to another identity
// is left after 903 (leaveOwnedNick).
func (c *client) saslSuccess(did, method string, rb *respBuf) {
	reauth := c.registered.Load()
	token, nickOwned, ok := c.logIn(did, method, rb)
	if !ok {
		return
	}
	rb.add(c.numericMsg("903", "SASL authentication successful"))
	if nickOwned {
		c.leaveOwnedNick(did, rb)
	}
	if !reauth || !c.passwordLogin {
		c.bearerNotice(token, rb)
	}
	c.countSASL("success")
	if reauth {
		c.rejoin(rb)
	}
}

// bearerNotice sends the REST bearer token of a login.
func (c *client) bearerNotice(token string, rb *respBuf) {
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{"*", "API-BEARER " + token}})
}

// logIn binds did to the connection (registered or not) with a new bearer token and sends 900;
// the caller sends the token (bearerNotice). A login by client password (method "plain" or
// "scram-sha-256", or a hosted account's registration) gets a token marked with
// PasswordTokenPrefix. nickOwned reports that the registered connection's nick belongs to
// another identity: the caller then moves it off (leaveOwnedNick) once its replies are out.
func (c *client) logIn(did, method string, rb *respBuf) (token string, nickOwned, ok bool) {
	s := c.s
	token, hash := newToken()
	c.passwordLogin = method != "crypto" && method != "atproto" && method != "pds-session"
	if c.passwordLogin {
		token = PasswordTokenPrefix + token
		hash = HashToken(token)
	}
	oper := s.isOperDID(did)
	if c.registered.Load() {
		if c.currentDID() == "" {
			if err := c.dropGuestMetadata(); err != nil {
				s.log.Warn("login", "err", err)
				rb.add(c.numericMsg("904", "SASL authentication failed"))
				return "", false, false
			}
		}
		res, err := c.propose(fsm.Authenticate{Session: c.id, DID: did, TokenHash: hash, Host: cloak(did), Oper: oper})
		if err != nil {
			rb.add(c.numericMsg("904", "SASL authentication failed"))
			return "", false, false
		}
		c.host = cloak(did)
		c.authMu.Lock()
		c.did, c.tokenHash = did, hash
		c.authMu.Unlock()
		nickOwned = res.Code == fsm.ErrNickOwned
	} else {
		c.host = cloak(did)
		s.mu.Lock()
		c.authMu.Lock()
		if c.tokenHash != "" && s.pending[c.tokenHash] == c {
			delete(s.pending, c.tokenHash)
		}
		c.did, c.tokenHash = did, hash
		c.authMu.Unlock()
		s.pending[hash] = c
		s.mu.Unlock()
	}
	if oper {
		c.oper = true
		rb.add(ircmsg.Message{Source: s.cfg.ServerName, Command: "MODE", Params: []string{c.displayNick(), "+o"}})
	}
	user := c.user
	if user == "" {
		user = "user"
	}
	rb.add(c.numericMsg("900", c.displayNick()+"!"+user+"@"+c.host, did, "You are now logged in as "+did))
	return token, nickOwned, true
}

// leaveOwnedNick moves a registered connection that just logged in as did off a nick another
// identity owns, to a nick derived from it.
func (c *client) leaveOwnedNick(did string, rb *respBuf) {
	wanted := c.nick
	for attempt := 0; attempt < 4; attempt++ {
		nick := derivedNick(wanted, did, attempt)
		r, err := c.propose(fsm.ChangeNick{Session: c.id, Nick: nick})
		if err == nil && r.Code == fsm.OK {
			rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{"*", fmt.Sprintf("%s is registered to another identity. You are %s (tied to your account).", wanted, nick)}})
			c.nick = nick
			return
		}
	}
}
