package irc

import (
	"sort"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// ChannelSendRefusal is the channel-mode check of a message sent to a channel, as a pure function
// of the sender's standing there (fsm.State.AssistSend): the text of the 404 refusal, "" when the
// modes let it through. oper is a server operator connection (exempt from +n). It is what
// channelMessage applies and what the assistance tools predict with.
func ChannelSendRefusal(f fsm.AssistSend, oper bool, cmd, text string) string {
	switch {
	case !f.Member && f.NoExternal && !oper:
		return "Cannot send to channel (+n)"
	case f.Moderated && !f.Privileged:
		return "Cannot send to channel (+m)"
	case !f.Privileged && f.Banned:
		return "Cannot send to channel (+b)"
	case !f.Privileged && f.Muted:
		return "Cannot send to channel (muted)"
	case f.Encrypted && cmd != "TAGMSG" && !strings.HasPrefix(text, "ENC"):
		return "Cannot send to channel (+E: encrypted messages only)"
	case f.NoCTCP && isCTCP(text):
		return "Cannot send to channel (+C: no CTCP)"
	}
	return ""
}

// SendPrediction is what the message path would answer a PRIVMSG now, without sending it.
type SendPrediction struct {
	Exists bool
	// Numeric and Refusal are the refusal ("" when accepted).
	Numeric, Refusal string
	// Local is true when the session is connected to this node: its flood bucket is then read.
	Local bool
	// FloodLimited is false when flood limits are off; FloodOK when a message may go now; Tokens
	// the messages left in the bucket.
	FloodLimited, FloodOK bool
	Tokens                float64
}

// PredictChannelSend runs the checks of a PRIVMSG of text by session sid to a (folded) channel:
// the channel's modes for the sender, then, when the session is connected here, its message flood
// bucket (read, not taken).
func (s *Server) PredictChannelSend(sid, channel, text string) SendPrediction {
	var p SendPrediction
	var f fsm.AssistSend
	oper := false
	s.state.Read(func(st *fsm.State) {
		f = st.AssistSend(channel, sid)
		se, _ := st.AssistSessionByID(sid)
		oper = se.Oper
	})
	p.Exists = f.Exists
	if !f.Exists {
		p.Numeric, p.Refusal = "403", "No such channel"
		return p
	}
	if c := s.localClient(sid); c != nil {
		p.Local = true
		if l := c.flood.messages; l != nil {
			p.FloodLimited = true
			p.Tokens = l.TokensAt(time.Now())
			p.FloodOK = p.Tokens >= 1
			if !p.FloodOK {
				p.Numeric, p.Refusal = "404", "Flood protection: sending too fast"
			}
		} else {
			p.FloodOK = true
		}
	}
	if r := ChannelSendRefusal(f, oper, "PRIVMSG", text); r != "" {
		p.Numeric, p.Refusal = "404", r
	}
	return p
}

// Capabilities lists the IRCv3 capabilities the edge offers, sorted.
func Capabilities() []string {
	out := make([]string, 0, len(capNames))
	for n := range capNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
