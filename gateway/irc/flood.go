package irc

import (
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// floodState holds a connection's flood limits, each a token bucket:
//
//   - commands: 10 per second with a burst of 10, for every command not exempt;
//   - messages: 5 PRIVMSG/NOTICE per 2 seconds (per target);
//   - tagmsgs: TAGMSG (typing notices, reactions, other client-tag events) per target, 10 at once,
//     then 5 per second: a client's own bucket, so that the typing notices a client such as
//     freeq's web app sends around every line do not spend the budget of the lines themselves;
//   - nicks: NICK (before registration too), 5 at once, then one per 5 seconds (438 over it);
//   - joins: JOIN, where each channel of a list counts (a list longer than the burst is admitted
//     on a full bucket and owes the rest) and JOIN 0 counts each channel it leaves, 20 at once,
//     then 2 per second; a wrong channel key (475) costs wrongKeyCost more, so that guessing a +k
//     key is slower than joining with the right one;
//   - sasl: AUTHENTICATE lines, 12 at once, then one per second (904 over it).
//
// Every Raft entry a client can cause by a command is behind one of these.
type floodState struct {
	commands *rate.Limiter
	messages *rate.Limiter
	tagmsgs  *rate.Limiter
	nicks    *rate.Limiter
	joins    *rate.Limiter
	sasl     *rate.Limiter
	// operFailures counts failed OPERs, limited whether or not flood limits are on (oper.go).
	operFailures int
}

const (
	joinBurst    = 20
	wrongKeyCost = 5
)

func (f *floodState) init(enabled bool) {
	if !enabled {
		return
	}
	f.commands = rate.NewLimiter(rate.Limit(10), 10)
	f.messages = rate.NewLimiter(rate.Every(400*time.Millisecond), 5)
	f.tagmsgs = rate.NewLimiter(rate.Every(200*time.Millisecond), 10)
	f.nicks = rate.NewLimiter(rate.Every(5*time.Second), 5)
	f.joins = rate.NewLimiter(rate.Every(500*time.Millisecond), joinBurst)
	f.sasl = rate.NewLimiter(rate.Every(time.Second), 12)
}

func (f *floodState) allowCommand(now time.Time) bool {
	return f.commands == nil || f.commands.AllowN(now, 1)
}

func (f *floodState) allowMessage(now time.Time) bool {
	return f.messages == nil || f.messages.AllowN(now, 1)
}

func (f *floodState) allowTagmsg(now time.Time) bool {
	return f.tagmsgs == nil || f.tagmsgs.AllowN(now, 1)
}

// allowN takes n tokens of l (at most its burst: a longer list is admitted on a full bucket, and
// owes the rest).
func allowN(l *rate.Limiter, now time.Time, n int) bool {
	return l == nil || l.AllowN(now, min(max(n, 1), l.Burst()))
}

// owe takes n more tokens of l into debt (none when n ≤ 0), delaying what comes next.
func (f *floodState) owe(l *rate.Limiter, now time.Time, n int) {
	if l == nil {
		return
	}
	for n > 0 {
		step := min(n, l.Burst())
		l.ReserveN(now, step) // never cancelled: the delay is the point
		n -= step
	}
}

// admitFlood reports whether m may run now under c's flood limits; when it may not, the refusal
// is added to rb. exempt is the command table's exemption from the general command limit.
func (c *client) admitFlood(m ircmsg.Message, exempt bool, rb *respBuf) bool {
	f, now := &c.flood, time.Now()
	switch m.Command {
	case "NICK":
		if !allowN(f.nicks, now, 1) {
			rb.add(c.numericMsg("438", m.Param(0), "Nick change too fast; wait "+waitText(f.nicks, now)+" before trying again"))
			return false
		}
	case "JOIN":
		n := c.joinCount(m)
		if !allowN(f.joins, now, n) {
			rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.displayNick(),
				"Flood protection: you are joining channels too fast; wait " + waitText(f.joins, now)}})
			return false
		}
		f.owe(f.joins, now, n-joinBurst)
	case "AUTHENTICATE":
		if !allowN(f.sasl, now, 1) {
			rb.add(c.numericMsg("904", "SASL authentication failed: too many AUTHENTICATE lines; slow down"))
			return false
		}
	}
	if !exempt && !f.allowCommand(now) {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "NOTICE", Params: []string{c.displayNick(), "Flood protection: you are sending commands too fast"}})
		return false
	}
	return true
}

// joinCount is what a JOIN counts against the join limit: its channels, or for JOIN 0 the
// channels it leaves.
func (c *client) joinCount(m ircmsg.Message) int {
	if m.Param(0) == "0" {
		n := 0
		c.s.state.Read(func(st *fsm.State) {
			if se, ok := st.Session(c.id); ok {
				n = se.ChannelCount()
			}
		})
		return n
	}
	n := 0
	for _, name := range strings.Split(m.Param(0), ",") {
		if name != "" {
			n++
		}
	}
	return n
}

// chargeFlood charges what m turned out to cost once it ran: each wrong channel key it was
// refused for (475) takes wrongKeyCost join tokens more, even into debt.
func (c *client) chargeFlood(m ircmsg.Message, rb *respBuf) {
	if m.Command != "JOIN" || c.flood.joins == nil {
		return
	}
	wrong := 0
	c.rbMu.Lock()
	for _, r := range rb.msgs {
		if r.Command == "475" {
			wrong++
		}
	}
	c.rbMu.Unlock()
	c.flood.owe(c.flood.joins, time.Now(), wrong*wrongKeyCost)
}

// waitText is how long until l has a token, in whole seconds.
func waitText(l *rate.Limiter, now time.Time) string {
	r := l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return strconv.Itoa(int((d+time.Second-1)/time.Second)) + " s"
}
