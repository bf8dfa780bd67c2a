package assist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// toolNames are the tools, in the contract's order.
var toolNames = []string{
	"validate_client_config", "diagnose_message_ordering", "diagnose_sync", "inspect_my_session",
	"diagnose_join_failure", "diagnose_disconnect", "replay_missed_messages",
	"predict_message_outcome", "explain_message_routing", "diagnose_av_session",
}

// ToolNames lists the tools.
func ToolNames() []string { return append([]string(nil), toolNames...) }

// tool is one tool: it decodes its input itself and answers, or returns an input error.
type tool struct {
	run func(ctx context.Context, who caller, body []byte) (*answer, error)
}

func (s *Service) toolTable() map[string]tool {
	return map[string]tool{
		"validate_client_config":    {s.validateClientConfig},
		"diagnose_message_ordering": {s.diagnoseMessageOrdering},
		"diagnose_sync":             {s.diagnoseSync},
		"inspect_my_session":        {s.inspectMySession},
		"diagnose_join_failure":     {s.diagnoseJoinFailure},
		"diagnose_disconnect":       {s.diagnoseDisconnect},
		"replay_missed_messages":    {s.replayMissedMessages},
		"predict_message_outcome":   {s.predictMessageOutcome},
		"explain_message_routing":   {s.explainMessageRouting},
		"diagnose_av_session":       {s.diagnoseAVSession},
	}
}

// Input limits.
const (
	maxFieldBytes  = 256  // an account, channel, nick, version or URL
	maxSymptom     = 2048 // free text the caller describes a problem with
	maxMessageIDs  = 100  // ids given to diagnose_message_ordering
	maxReplay      = 1000 // messages replay_missed_messages returns at most (and by default)
	maxWireLine    = 8192 // the longest IRC line, CRLF included
	maxListEntries = 32   // desired_features
)

// decode unmarshals a tool's input; unknown fields are ignored, wrong types are input errors.
func decode(body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fmt.Errorf("field %s must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		}
		return errors.New("the body is not a JSON object of the tool's input")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64":
		return "an integer"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "of another type"
}

// text checks a string field: valid UTF-8, no control characters, at most max bytes; required
// fields must be non-empty.
func text(name, v string, max int, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return fmt.Errorf("field %s is required", name)
	case len(v) > max:
		return fmt.Errorf("field %s is over %d bytes", name, max)
	case !utf8.ValidString(v):
		return fmt.Errorf("field %s is not UTF-8", name)
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("field %s holds control characters", name)
	}
	return nil
}

// channelName checks and folds a channel field; a name without # gets one.
func channelName(field, v string, required bool) (string, error) {
	if err := text(field, v, maxFieldBytes, required); err != nil {
		return "", err
	}
	if v == "" {
		return "", nil
	}
	if v[0] != '#' && v[0] != '&' {
		v = "#" + v
	}
	if len(v) > fsm.MaxChannelLen || strings.ContainsAny(v, " ,:") {
		return "", fmt.Errorf("field %s is not a channel name", field)
	}
	return fsm.Fold(v), nil
}

// account checks an account field: a DID.
func account(field, v string, required bool) error {
	if err := text(field, v, maxFieldBytes, required); err != nil {
		return err
	}
	if v != "" && (!strings.HasPrefix(v, "did:") || strings.ContainsAny(v, " ")) {
		return fmt.Errorf("field %s must be a DID (did:...)", field)
	}
	return nil
}

// self resolves the account a self-only tool is asked about: the given one (the caller's own
// unless the caller is a server operator) or the caller's. It returns a refusal when the caller
// may not see it.
func (s *Service) self(who caller, acct, prefix string) (string, *answer) {
	if acct == "" {
		acct = who.did
	}
	switch {
	case acct == "":
		return "", newAnswer(s.cfg.Now()).diagnose(false, prefix+"_SELF_ONLY", high,
			"This tool answers about your own account: send your bearer token (Authorization: Bearer) or name your DID as account").
			redact("everything about accounts: the request carries no bearer token").
			fix("Authenticate over IRC (SASL ATPROTO-CHALLENGE) and send the API-BEARER token", "See /auth.md")
	case acct != who.did && !who.oper:
		return "", newAnswer(s.cfg.Now()).diagnose(false, prefix+"_SELF_ONLY", high,
			"This tool answers only about the account of the bearer token (or to a server operator)").
			redact("the state of another account").
			fix("Ask with the bearer token of that account", "")
	}
	return acct, nil
}

// channelTier is the caller's standing in a channel. A secret channel (+s) the caller is not a
// member or operator of does not exist for it: every tool answers as for a missing channel.
type channelTier struct {
	exists, readable, member, op bool
}

func (s *Service) tierIn(channel string, who caller) channelTier {
	var (
		a      fsm.AssistAccess
		secret bool
	)
	s.cfg.State.Read(func(st *fsm.State) {
		a = fsm.Diagnose(st).Access(channel, who.did)
		ch, _ := fsm.Diagnose(st).Channel(channel)
		secret = ch.Secret
	})
	t := channelTier{exists: a.Exists, readable: a.Readable || (a.Exists && who.oper), member: a.Member, op: a.Op || (a.Exists && who.oper)}
	if secret && !t.member && !t.op {
		return channelTier{}
	}
	return t
}

// gate answers for a channel the caller cannot ask about (it does not exist, or the caller may
// not read it); nil when the tool may go on.
func (s *Service) gate(channel string, who caller, prefix string) (channelTier, *answer) {
	tier := s.tierIn(channel, who)
	switch {
	case !tier.exists:
		return tier, noChannel(newAnswer(s.cfg.Now()), channel)
	case !tier.readable:
		return tier, s.unreadable(prefix, channel)
	}
	return tier, nil
}

// gateMember is gate for a tool that answers a channel's members (and operators) only.
func (s *Service) gateMember(channel string, who caller, prefix string) (channelTier, *answer) {
	tier, refused := s.gate(channel, who, prefix)
	if refused == nil && !tier.member && !tier.op {
		return tier, s.unreadable(prefix, channel)
	}
	return tier, refused
}

// selfAccount decodes the input of a tool that takes only an account and resolves it (self).
func (s *Service) selfAccount(who caller, body []byte, prefix string) (string, *answer, error) {
	var in struct {
		Account string `json:"account"`
	}
	if err := decode(body, &in); err != nil {
		return "", nil, err
	}
	if err := account("account", in.Account, false); err != nil {
		return "", nil, err
	}
	acct, refused := s.self(who, in.Account, prefix)
	return acct, refused, nil
}

// unreadable is the answer for a channel the caller may not read; it names nothing of it.
func (s *Service) unreadable(prefix, channel string) *answer {
	return newAnswer(s.cfg.Now()).diagnose(false, prefix+"_REQUIRES_MEMBERSHIP", high,
		"Only the members, founder and operators of "+channel+" may ask about its messages").
		redact("messages, msgids and members of "+channel).
		fix("Join the channel, then ask again with your bearer token", "")
}

func noChannel(a *answer, channel string) *answer {
	return a.diagnose(false, "CHANNEL_DOES_NOT_EXIST", high, "There is no channel "+channel+" on this server").
		fix("Check the name; a JOIN creates a channel that does not exist", "")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
