package irc

import (
	"sort"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// helpTopics is what HELP (and HELPOP) explains: one entry per command, keyed by its name.
var helpTopics = map[string][]string{
	"PRIVMSG":     {"PRIVMSG <target>{,<target>} :<text>", "Sends a message to channels, nicks or DIDs (did:...)."},
	"NOTICE":      {"NOTICE <target>{,<target>} :<text>", "Like PRIVMSG; never answered automatically."},
	"JOIN":        {"JOIN <channel>{,<channel>} [<key>{,<key>}]", "Joins channels; JOIN 0 leaves them all."},
	"PART":        {"PART <channel>{,<channel>} [:<reason>]", "Leaves channels."},
	"MODE":        {"MODE <channel> [<modes> [<args>]]", "Channel modes: o h v b I i t k l n m s E."},
	"WHO":         {"WHO <channel|mask> [%<fields>[,<token>]]", "Lists users; WHOX fields with %."},
	"WHOWAS":      {"WHOWAS <nick> [<count>]", "Shows who recently used a nick."},
	"CHATHISTORY": {"CHATHISTORY <LATEST|BEFORE|AFTER|AROUND|BETWEEN|TARGETS> ...", "Replays stored messages (draft/chathistory)."},
	"MARKREAD":    {"MARKREAD <target> [timestamp=<time>]", "Reads or moves your read marker (draft/read-marker)."},
	"MSGSIG":      {"MSGSIG <base64url ed25519 public key>", "Registers the key your client signs messages with."},
	"PIN":         {"PIN <channel> <msgid>", "Pins a message (channel operators)."},
	"KILL":        {"KILL <nick> :<reason>", "Disconnects a user (server operators)."},
	"WALLOPS":     {"WALLOPS :<text>", "Sends a message to every user with mode +w, on every node (server operators)."},
	"LINKS":       {"LINKS [[<server>] <mask>]", "Lists this server and the other nodes of its cluster."},
	"HELP":        {"HELP [<subject>]", "Lists the subjects, or explains one."},
}

// handleHELP answers HELP and HELPOP [<subject>] with 704/705/706, or 524 for an unknown subject.
func handleHELP(c *client, m ircmsg.Message, rb *respBuf) {
	subject := strings.ToUpper(m.Param(0))
	if subject == "" {
		names := make([]string, 0, len(helpTopics))
		for name := range helpTopics {
			names = append(names, name)
		}
		sort.Strings(names)
		rb.add(c.numericMsg("704", "*", "Palaver answers HELP on these subjects:"))
		rb.add(c.numericMsg("705", "*", strings.Join(names, " ")))
		rb.add(c.numericMsg("706", "*", "End of /HELP"))
		return
	}
	text, ok := helpTopics[subject]
	if !ok {
		rb.add(c.numericMsg("524", subject, "No help available on this topic"))
		return
	}
	rb.add(c.numericMsg("704", subject, text[0]))
	for _, l := range text[1:] {
		rb.add(c.numericMsg("705", subject, l))
	}
	rb.add(c.numericMsg("706", subject, "End of /HELP"))
}
