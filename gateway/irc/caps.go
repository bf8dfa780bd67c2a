package irc

import (
	"sort"
	"strings"
)

// capability bits. Not persisted.
type capBits uint32

const (
	capMessageTags capBits = 1 << iota
	capServerTime
	capAccountTag
	capEchoMessage
	capExtendedJoin
	capAccountNotify
	capAwayNotify
	capMultiPrefix
	capBatch
	capLabeledResponse
	capChathistory
	capSASL
	capMsgSig // freeq.at/msgsig: the client may sign with MSGSIG keys (signing works without it too)
	capUserhostInNames
	capReadMarker
	capMultiline
	capRedaction
	capSetname
	capExtendedMonitor
	capMetadata
	capMetadataNotify
	capChannelRename
	capEventPlayback // draft/event-playback: channel events in history batches (playback.go)
	capAct           // freeq.at/act: the client speaks the signed task events (ACT TAGMSGs); they are relayed to message-tags clients either way
)

var capNames = map[string]capBits{
	"message-tags":      capMessageTags,
	"server-time":       capServerTime,
	"account-tag":       capAccountTag,
	"echo-message":      capEchoMessage,
	"extended-join":     capExtendedJoin,
	"account-notify":    capAccountNotify,
	"away-notify":       capAwayNotify,
	"multi-prefix":      capMultiPrefix,
	"batch":             capBatch,
	"labeled-response":  capLabeledResponse,
	"draft/chathistory": capChathistory,
	"sasl":              capSASL,
	"freeq.at/msgsig":   capMsgSig,
	"userhost-in-names": capUserhostInNames,
	"draft/read-marker": capReadMarker,
	multilineCap:        capMultiline,
	redactionCap:        capRedaction,
	"setname":           capSetname,
	"extended-monitor":  capExtendedMonitor,
	metadataCap:         capMetadata,
	metadataNotifyCap:   capMetadataNotify,
	channelRenameCap:    capChannelRename,
	"freeq.at/act":      capAct,
	eventPlaybackCap:    capEventPlayback,
}

// capLSLineBudget bounds the capability list of one CAP LS line, so that with the prefix
// (":<server> CAP <nick> LS * :") the line stays within 512 bytes for any server name and nick.
const capLSLineBudget = 300

// capLSLines renders CAP LS as the lines to send: one line for clients before 302 (they cannot
// read continuations), and for 302 clients as many lines as the list needs, all but the last
// marked with "*" (IRCv3 capability negotiation, multiline replies).
func capLSLines(v302 bool) []string {
	list := capLS(v302)
	if !v302 || len(list) <= capLSLineBudget {
		return []string{list}
	}
	var lines []string
	line := ""
	for _, name := range strings.Fields(list) {
		if line != "" && len(line)+1+len(name) > capLSLineBudget {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += name
	}
	return append(lines, line)
}

// capLS renders the CAP LS list. A client asking for 302 gets sasl's mechanism list.
func capLS(v302 bool) string {
	names := make([]string, 0, len(capNames))
	for n := range capNames {
		if n == "sasl" && v302 {
			n = "sasl=ATPROTO-CHALLENGE"
		}
		if n == multilineCap && v302 {
			n += "=" + multilineCapValue
		}
		if n == metadataCap && v302 {
			n += "=" + metadataCapValue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// parseCapReq resolves a CAP REQ list; ok is false if any name is unknown (all-or-nothing).
func parseCapReq(list string) (add, remove capBits, ok bool) {
	for _, name := range strings.Fields(list) {
		neg := strings.HasPrefix(name, "-")
		name = strings.ToLower(strings.TrimPrefix(name, "-"))
		bit, known := capNames[name]
		if !known {
			return 0, 0, false
		}
		if neg {
			remove |= bit
		} else {
			add |= bit
		}
	}
	return add, remove, true
}

func (b capBits) names() string {
	var out []string
	for n, bit := range capNames {
		if b&bit != 0 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
