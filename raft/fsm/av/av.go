package av

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Command types of calls.
const (
	TypeAVStart   fsm.CommandType = 50
	TypeAVJoin    fsm.CommandType = 51
	TypeAVLeave   fsm.CommandType = 52
	TypeAVEnd     fsm.CommandType = 53
	TypeAVEndNode fsm.CommandType = 54
	// TypeAVAddArtifact attaches an artifact (a recording, a transcript, ...) to a call.
	TypeAVAddArtifact fsm.CommandType = 55
)

// Result codes of calls.
const (
	ErrAVNoCall        fsm.Code = 40 // no active call with that id (or in that channel)
	ErrAVFull          fsm.Code = 41 // the call has MaxAVParticipants participants
	ErrAVActive        fsm.Code = 42 // AVStart: the channel has an active call already
	ErrAVNeedsAccount  fsm.Code = 43 // only authenticated users take part in calls
	ErrAVArtifactsFull fsm.Code = 44 // the call has MaxAVArtifacts artifacts
)

// Events of calls: the call id is in Event.MsgID, a leave or end reason in Event.Text.
const (
	EvAVStarted fsm.EventKind = 50 + iota
	EvAVJoined
	EvAVLeft
	EvAVEnded
)

const (
	// MaxAVParticipants bounds the live participants of one call.
	MaxAVParticipants = 100
	// MaxAVRoster bounds the participants a call remembers, live or gone.
	MaxAVRoster = 500
	// MaxRecentAVCalls bounds the ended calls kept.
	MaxRecentAVCalls = 500
	// MaxAVReason bounds a leave or end reason.
	MaxAVReason = 200
	// MaxAVArtifacts bounds the artifacts of one call.
	MaxAVArtifacts = 50
	// MaxAVArtifactURL bounds an artifact's URL, in bytes.
	MaxAVArtifactURL = 2048
	// MaxAVArtifactTitle bounds an artifact's title, in bytes.
	MaxAVArtifactTitle = 200
)

// AVArtifactKinds are the kinds of call artifacts: a recording of the call, a transcript of it, a
// summary, notes taken during it, or any other link.
var AVArtifactKinds = []string{"recording", "transcript", "summary", "notes", "link"}

// section is the calls' part of the state: nil until the first call.
var section = fsm.NewSection[AVState]("av")

// module registers the calls with the state machine.
func module() fsm.Module {
	return fsm.Module{
		Section: section,
		Codes: map[fsm.Code]string{
			ErrAVNoCall: "av-no-call", ErrAVFull: "av-full", ErrAVActive: "av-active",
			ErrAVNeedsAccount: "av-needs-account", ErrAVArtifactsFull: "av-artifacts-full",
			ErrAVNotOperator: "av-not-operator",
		},
		Commands: map[fsm.CommandType]fsm.CommandSpec{
			TypeAVStart:       handle("av-start", 0, (*tx).avStart),
			TypeAVJoin:        handle("av-join", 0, (*tx).avJoin),
			TypeAVLeave:       handle("av-leave", 0, (*tx).avLeave),
			TypeAVEnd:         handle("av-end", 0, (*tx).avEnd),
			TypeAVEndNode:     handle("av-end-node", 0, (*tx).avEndNode),
			TypeAVAddArtifact: handle("av-add-artifact", 0, (*tx).avAddArtifact),
			TypeAVOperatorEnd: handle("av-operator-end", 0, (*tx).avOperatorEnd),
		},
	}
}

func init() { fsm.Register(module()) }

// tx is one call command being applied.
type tx struct{ *fsm.Applier }

// handle registers command type C, introduced at feature level level, applied by f.
func handle[C fsm.Command](name string, level int, f func(*tx, C) fsm.Result) fsm.CommandSpec {
	return fsm.Handle(name, level, func(a *fsm.Applier, c C) fsm.Result { return f(&tx{a}, c) })
}

// AVState is the replicated state of calls.
type AVState struct {
	Calls  map[string]*AVCall `json:"calls"`           // by call id: active and recently ended
	Active map[string]string  `json:"active"`          // folded channel → active call id
	Ended  []string           `json:"ended,omitempty"` // ended call ids, oldest first
}

// AVCall is one call.
type AVCall struct {
	ID            string          `json:"id"`
	Channel       string          `json:"channel"`
	Host          string          `json:"host"` // node name whose forwarding unit carries the media
	CreatedBy     string          `json:"created_by"`
	CreatedByNick string          `json:"created_by_nick"`
	CreatedAt     int64           `json:"created_at"` // unix ms
	EndedAt       int64           `json:"ended_at,omitempty"`
	EndedBy       string          `json:"ended_by,omitempty"`
	EndReason     string          `json:"end_reason,omitempty"`
	Participants  []AVParticipant `json:"participants"`        // in order of first join
	Artifacts     []AVArtifact    `json:"artifacts,omitempty"` // in order of addition
}

// AVArtifact is something a member attached to a call: a recording, a transcript, a summary,
// notes or a link. The server keeps its URL and title only, not the content.
type AVArtifact struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"` // one of AVArtifactKinds
	URL       string `json:"url"`  // http or https
	Title     string `json:"title,omitempty"`
	AddedBy   string `json:"added_by"` // DID
	AddedNick string `json:"added_nick"`
	AddedAt   int64  `json:"added_at"` // unix ms
}

// AVParticipant is one account in a call's roster.
type AVParticipant struct {
	DID      string `json:"did"`
	Nick     string `json:"nick"`
	JoinedAt int64  `json:"joined_at"`         // unix ms, of the latest join
	LeftAt   int64  `json:"left_at,omitempty"` // 0 while in the call
	Reason   string `json:"reason,omitempty"`  // why it left
}

// Live reports whether the call has not ended.
func (c *AVCall) Live() bool { return c.EndedAt == 0 }

// LiveParticipants counts the participants in the call now.
func (c *AVCall) LiveParticipants() int {
	n := 0
	for _, p := range c.Participants {
		if p.LeftAt == 0 {
			n++
		}
	}
	return n
}

// AVStart opens a call in a channel, hosted by Node. The proposer mints the call id.
type AVStart struct {
	CallID  string `json:"call_id"`
	Channel string `json:"channel"`
	Node    string `json:"node"`
	DID     string `json:"did"` // who starts it: an authenticated member of the channel
}

// AVJoin puts an account in the roster of the channel's active call (its media connection
// reached the host). The account must have a session in the channel and not be banned.
type AVJoin struct {
	CallID string `json:"call_id"`
	DID    string `json:"did"`
}

// AVLeave takes an account out of a call's roster; the last one out ends the call.
type AVLeave struct {
	CallID string `json:"call_id"`
	DID    string `json:"did"`
	Reason string `json:"reason,omitempty"`
}

// AVEnd ends a call.
type AVEnd struct {
	CallID string `json:"call_id"`
	By     string `json:"by,omitempty"` // DID, or empty for the server
	Reason string `json:"reason,omitempty"`
}

// AVEndNode ends every active call hosted by Node: the node died, left or restarted.
type AVEndNode struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// AVAddArtifact attaches an artifact to a call, live or recently ended. Only an authenticated
// member of the call's channel (not banned) adds one. The proposer mints the artifact id; the
// envelope's time is when it was added.
type AVAddArtifact struct {
	CallID     string `json:"call_id"`
	ArtifactID string `json:"artifact_id"`
	DID        string `json:"did"`
	Kind       string `json:"kind"`
	URL        string `json:"url"`
	Title      string `json:"title,omitempty"`
}

// ValidAVArtifact reports why an artifact's kind, URL or title is refused, or "" when they are
// fine. Apply and the gateway use the same rule.
func ValidAVArtifact(kind, rawURL, title string) string {
	if !slices.Contains(AVArtifactKinds, kind) {
		return "kind must be one of " + strings.Join(AVArtifactKinds, ", ")
	}
	lower := strings.ToLower(rawURL)
	rest, isHTTP := strings.CutPrefix(lower, "http://")
	if !isHTTP {
		rest, isHTTP = strings.CutPrefix(lower, "https://")
	}
	switch {
	case len(rawURL) > MaxAVArtifactURL:
		return "url is longer than 2048 bytes"
	case !isHTTP || rest == "" || rest[0] == '/':
		return "url must be an http or https URL with a host"
	case strings.ContainsFunc(rawURL, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "url must not contain spaces or control characters"
	case len(title) > MaxAVArtifactTitle:
		return "title is longer than 200 bytes"
	case !utf8.ValidString(title) || strings.ContainsFunc(title, unicode.IsControl):
		return "title must be UTF-8 text without control characters"
	}
	return ""
}

func (AVStart) CommandType() fsm.CommandType       { return TypeAVStart }
func (AVJoin) CommandType() fsm.CommandType        { return TypeAVJoin }
func (AVLeave) CommandType() fsm.CommandType       { return TypeAVLeave }
func (AVEnd) CommandType() fsm.CommandType         { return TypeAVEnd }
func (AVEndNode) CommandType() fsm.CommandType     { return TypeAVEndNode }
func (AVAddArtifact) CommandType() fsm.CommandType { return TypeAVAddArtifact }

// avMember finds a session of did in channel that may take part in its call: a member, not
// banned. It answers the refusal code otherwise.
func avMember(s *fsm.State, channel, did string) (fsm.Session, fsm.Code) {
	if did == "" {
		return fsm.Session{}, ErrAVNeedsAccount
	}
	ch, ok := s.Channel(channel)
	if !ok {
		return fsm.Session{}, fsm.ErrNoSuchChannel
	}
	code := fsm.ErrNotOnChannel
	for _, se := range s.SessionsByDID(did) {
		if !se.InChannel(channel) {
			continue
		}
		if ch.IsBanned(se.Hostmask(), did) {
			code = fsm.ErrBanned
			continue
		}
		return se, fsm.OK
	}
	return fsm.Session{}, code
}

func (a *tx) av() *AVState {
	st := section.Make(a.Applier)
	if st.Calls == nil { // made just now: a state of calls always has both maps
		st.Calls, st.Active = map[string]*AVCall{}, map[string]string{}
	}
	return st
}

// activeCall is the live call with id, or nil.
func (a *tx) activeCall(id string) *AVCall {
	if section.Of(a.State()) == nil {
		return nil
	}
	if c := section.Of(a.State()).Calls[id]; c != nil && c.Live() {
		return c
	}
	return nil
}

func (a *tx) avStart(c AVStart) fsm.Result {
	if c.CallID == "" || c.Node == "" || section.Of(a.State()) != nil && section.Of(a.State()).Calls[c.CallID] != nil {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	se, code := avMember(a.State(), c.Channel, c.DID)
	if code != fsm.OK {
		return fsm.Result{Code: code}
	}
	av := a.av()
	if id := av.Active[c.Channel]; id != "" {
		return fsm.Result{Code: ErrAVActive}
	}
	call := &AVCall{ID: c.CallID, Channel: c.Channel, Host: c.Node, CreatedBy: c.DID, CreatedByNick: se.Nick,
		CreatedAt: a.Time(), Participants: []AVParticipant{}}
	av.Calls[c.CallID] = call
	av.Active[c.Channel] = c.CallID
	a.Emit(fsm.Event{Kind: EvAVStarted, Actor: se.Ref(), Channel: c.Channel, MsgID: c.CallID})
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) avJoin(c AVJoin) fsm.Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return fsm.Result{Code: ErrAVNoCall}
	}
	se, code := avMember(a.State(), call.Channel, c.DID)
	if code != fsm.OK {
		return fsm.Result{Code: code}
	}
	i := slices.IndexFunc(call.Participants, func(p AVParticipant) bool { return p.DID == c.DID })
	if i >= 0 && call.Participants[i].LeftAt == 0 {
		return fsm.Result{Code: fsm.NoChange}
	}
	if call.LiveParticipants() >= MaxAVParticipants || i < 0 && len(call.Participants) >= MaxAVRoster {
		return fsm.Result{Code: ErrAVFull}
	}
	p := AVParticipant{DID: c.DID, Nick: se.Nick, JoinedAt: a.Time()}
	if i >= 0 {
		call.Participants[i] = p
	} else {
		call.Participants = append(call.Participants, p)
	}
	a.Emit(fsm.Event{Kind: EvAVJoined, Actor: se.Ref(), Channel: call.Channel, MsgID: call.ID})
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) avLeave(c AVLeave) fsm.Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return fsm.Result{Code: ErrAVNoCall}
	}
	i := slices.IndexFunc(call.Participants, func(p AVParticipant) bool { return p.DID == c.DID && p.LeftAt == 0 })
	if i < 0 {
		return fsm.Result{Code: fsm.NoChange}
	}
	p := &call.Participants[i]
	p.LeftAt, p.Reason = a.Time(), clip(c.Reason, MaxAVReason)
	a.Emit(fsm.Event{Kind: EvAVLeft, Actor: fsm.SessionRef{Nick: p.Nick, DID: p.DID}, Channel: call.Channel, MsgID: call.ID,
		Text: p.Reason})
	if call.LiveParticipants() == 0 {
		a.endCall(call, fsm.SessionRef{Nick: p.Nick, DID: p.DID}, "everyone left")
	}
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) avEnd(c AVEnd) fsm.Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return fsm.Result{Code: ErrAVNoCall}
	}
	a.endCall(call, fsm.SessionRef{DID: c.By}, clip(c.Reason, MaxAVReason))
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) avEndNode(c AVEndNode) fsm.Result {
	if c.Node == "" {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if section.Of(a.State()) == nil {
		return fsm.Result{Code: fsm.NoChange}
	}
	var ids []string
	for _, id := range section.Of(a.State()).Active {
		if call := section.Of(a.State()).Calls[id]; call != nil && call.Host == c.Node {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a.endCall(section.Of(a.State()).Calls[id], fsm.SessionRef{}, clip(c.Reason, MaxAVReason))
	}
	if len(ids) == 0 {
		return fsm.Result{Code: fsm.NoChange}
	}
	return fsm.Result{Code: fsm.OK, Count: len(ids)}
}

func (a *tx) avAddArtifact(c AVAddArtifact) fsm.Result {
	if c.ArtifactID == "" || ValidAVArtifact(c.Kind, c.URL, c.Title) != "" {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	var call *AVCall
	if section.Of(a.State()) != nil {
		call = section.Of(a.State()).Calls[c.CallID]
	}
	if call == nil {
		return fsm.Result{Code: ErrAVNoCall}
	}
	se, code := avMember(a.State(), call.Channel, c.DID)
	if code != fsm.OK {
		return fsm.Result{Code: code}
	}
	if slices.ContainsFunc(call.Artifacts, func(x AVArtifact) bool { return x.ID == c.ArtifactID }) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	if len(call.Artifacts) >= MaxAVArtifacts {
		return fsm.Result{Code: ErrAVArtifactsFull}
	}
	call.Artifacts = append(call.Artifacts, AVArtifact{ID: c.ArtifactID, Kind: c.Kind, URL: c.URL, Title: c.Title,
		AddedBy: c.DID, AddedNick: se.Nick, AddedAt: a.Time()})
	return fsm.Result{Code: fsm.OK}
}

// endCall ends a live call: its participants leave, the channel is free for a new call, and the
// oldest ended calls beyond MaxRecentAVCalls are forgotten. by is who ended it (zero for the
// server); its DID is kept as the call's EndedBy.
func (a *tx) endCall(call *AVCall, by fsm.SessionRef, reason string) {
	av := a.av()
	for i := range call.Participants {
		if call.Participants[i].LeftAt == 0 {
			call.Participants[i].LeftAt, call.Participants[i].Reason = a.Time(), "call ended"
		}
	}
	call.EndedAt, call.EndedBy, call.EndReason = a.Time(), by.DID, reason
	if av.Active[call.Channel] == call.ID {
		delete(av.Active, call.Channel)
	}
	av.Ended = append(av.Ended, call.ID)
	for len(av.Ended) > MaxRecentAVCalls {
		delete(av.Calls, av.Ended[0])
		av.Ended = slices.Delete(av.Ended, 0, 1)
	}
	a.Emit(fsm.Event{Kind: EvAVEnded, Channel: call.Channel, MsgID: call.ID, Text: reason, Actor: by})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n]
}
