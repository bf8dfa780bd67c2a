package fsm

// Calls in channels (AV sessions): which node hosts a channel's call, who is in its roster, and
// when it started and ended. The media itself never enters the log: it flows through the
// forwarding unit of the hosting node. One active call per channel; ended calls are kept (the
// newest MaxRecentAVCalls) for the session routes.

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Command types of calls.
const (
	TypeAVStart   CommandType = 50
	TypeAVJoin    CommandType = 51
	TypeAVLeave   CommandType = 52
	TypeAVEnd     CommandType = 53
	TypeAVEndNode CommandType = 54
	// TypeAVAddArtifact attaches an artifact (a recording, a transcript, ...) to a call.
	TypeAVAddArtifact CommandType = 55
)

// Result codes of calls.
const (
	ErrAVNoCall        Code = 40 // no active call with that id (or in that channel)
	ErrAVFull          Code = 41 // the call has MaxAVParticipants participants
	ErrAVActive        Code = 42 // AVStart: the channel has an active call already
	ErrAVNeedsAccount  Code = 43 // only authenticated users take part in calls
	ErrAVArtifactsFull Code = 44 // the call has MaxAVArtifacts artifacts
)

// Events of calls: the call id is in Event.MsgID, a leave or end reason in Event.Text.
const (
	EvAVStarted EventKind = 50 + iota
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

func init() {
	registerCommands(map[CommandType]CommandSpec{
		TypeAVStart:       spec("av-start", (*Applier).avStart),
		TypeAVJoin:        spec("av-join", (*Applier).avJoin),
		TypeAVLeave:       spec("av-leave", (*Applier).avLeave),
		TypeAVEnd:         spec("av-end", (*Applier).avEnd),
		TypeAVEndNode:     spec("av-end-node", (*Applier).avEndNode),
		TypeAVAddArtifact: spec("av-add-artifact", (*Applier).avAddArtifact),
	})
	nameCode(ErrAVNoCall, "av-no-call")
	nameCode(ErrAVFull, "av-full")
	nameCode(ErrAVActive, "av-active")
	nameCode(ErrAVNeedsAccount, "av-needs-account")
	nameCode(ErrAVArtifactsFull, "av-artifacts-full")
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

func (AVStart) CommandType() CommandType       { return TypeAVStart }
func (AVJoin) CommandType() CommandType        { return TypeAVJoin }
func (AVLeave) CommandType() CommandType       { return TypeAVLeave }
func (AVEnd) CommandType() CommandType         { return TypeAVEnd }
func (AVEndNode) CommandType() CommandType     { return TypeAVEndNode }
func (AVAddArtifact) CommandType() CommandType { return TypeAVAddArtifact }

// avMember finds a session of did in channel that may take part in its call: a member, not
// banned. It answers the refusal code otherwise.
func (s *State) avMember(channel, did string) (*Session, Code) {
	if did == "" {
		return nil, ErrAVNeedsAccount
	}
	ch := s.channels[channel]
	if ch == nil {
		return nil, ErrNoSuchChannel
	}
	code := ErrNotOnChannel
	for _, se := range s.SessionsByDID(did) {
		if !se.InChannel(channel) {
			continue
		}
		if ch.IsBanned(se.Hostmask(), did) {
			code = ErrBanned
			continue
		}
		return se, OK
	}
	return nil, code
}

func (a *Applier) av() *AVState {
	if a.st.av == nil {
		a.st.av = &AVState{Calls: map[string]*AVCall{}, Active: map[string]string{}}
	}
	return a.st.av
}

// activeCall is the live call with id, or nil.
func (a *Applier) activeCall(id string) *AVCall {
	if a.st.av == nil {
		return nil
	}
	if c := a.st.av.Calls[id]; c != nil && c.Live() {
		return c
	}
	return nil
}

func (a *Applier) avStart(c AVStart) Result {
	if c.CallID == "" || c.Node == "" || a.st.av != nil && a.st.av.Calls[c.CallID] != nil {
		return Result{Code: ErrInvalid}
	}
	se, code := a.st.avMember(c.Channel, c.DID)
	if code != OK {
		return Result{Code: code}
	}
	av := a.av()
	if id := av.Active[c.Channel]; id != "" {
		return Result{Code: ErrAVActive}
	}
	call := &AVCall{ID: c.CallID, Channel: c.Channel, Host: c.Node, CreatedBy: c.DID, CreatedByNick: se.Nick,
		CreatedAt: a.env.Time, Participants: []AVParticipant{}}
	av.Calls[c.CallID] = call
	av.Active[c.Channel] = c.CallID
	a.emit(Event{Kind: EvAVStarted, Actor: se.Ref(), Channel: c.Channel, MsgID: c.CallID})
	return Result{Code: OK}
}

func (a *Applier) avJoin(c AVJoin) Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return Result{Code: ErrAVNoCall}
	}
	se, code := a.st.avMember(call.Channel, c.DID)
	if code != OK {
		return Result{Code: code}
	}
	i := slices.IndexFunc(call.Participants, func(p AVParticipant) bool { return p.DID == c.DID })
	if i >= 0 && call.Participants[i].LeftAt == 0 {
		return Result{Code: NoChange}
	}
	if call.LiveParticipants() >= MaxAVParticipants || i < 0 && len(call.Participants) >= MaxAVRoster {
		return Result{Code: ErrAVFull}
	}
	p := AVParticipant{DID: c.DID, Nick: se.Nick, JoinedAt: a.env.Time}
	if i >= 0 {
		call.Participants[i] = p
	} else {
		call.Participants = append(call.Participants, p)
	}
	a.emit(Event{Kind: EvAVJoined, Actor: se.Ref(), Channel: call.Channel, MsgID: call.ID})
	return Result{Code: OK}
}

func (a *Applier) avLeave(c AVLeave) Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return Result{Code: ErrAVNoCall}
	}
	i := slices.IndexFunc(call.Participants, func(p AVParticipant) bool { return p.DID == c.DID && p.LeftAt == 0 })
	if i < 0 {
		return Result{Code: NoChange}
	}
	p := &call.Participants[i]
	p.LeftAt, p.Reason = a.env.Time, clip(c.Reason, MaxAVReason)
	a.emit(Event{Kind: EvAVLeft, Actor: SessionRef{Nick: p.Nick, DID: p.DID}, Channel: call.Channel, MsgID: call.ID,
		Text: p.Reason})
	if call.LiveParticipants() == 0 {
		a.endCall(call, SessionRef{Nick: p.Nick, DID: p.DID}, "everyone left")
	}
	return Result{Code: OK}
}

func (a *Applier) avEnd(c AVEnd) Result {
	call := a.activeCall(c.CallID)
	if call == nil {
		return Result{Code: ErrAVNoCall}
	}
	a.endCall(call, SessionRef{DID: c.By}, clip(c.Reason, MaxAVReason))
	return Result{Code: OK}
}

func (a *Applier) avEndNode(c AVEndNode) Result {
	if c.Node == "" {
		return Result{Code: ErrInvalid}
	}
	if a.st.av == nil {
		return Result{Code: NoChange}
	}
	var ids []string
	for _, id := range a.st.av.Active {
		if call := a.st.av.Calls[id]; call != nil && call.Host == c.Node {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a.endCall(a.st.av.Calls[id], SessionRef{}, clip(c.Reason, MaxAVReason))
	}
	if len(ids) == 0 {
		return Result{Code: NoChange}
	}
	return Result{Code: OK, Count: len(ids)}
}

func (a *Applier) avAddArtifact(c AVAddArtifact) Result {
	if c.ArtifactID == "" || ValidAVArtifact(c.Kind, c.URL, c.Title) != "" {
		return Result{Code: ErrInvalid}
	}
	var call *AVCall
	if a.st.av != nil {
		call = a.st.av.Calls[c.CallID]
	}
	if call == nil {
		return Result{Code: ErrAVNoCall}
	}
	se, code := a.st.avMember(call.Channel, c.DID)
	if code != OK {
		return Result{Code: code}
	}
	if slices.ContainsFunc(call.Artifacts, func(x AVArtifact) bool { return x.ID == c.ArtifactID }) {
		return Result{Code: ErrInvalid}
	}
	if len(call.Artifacts) >= MaxAVArtifacts {
		return Result{Code: ErrAVArtifactsFull}
	}
	call.Artifacts = append(call.Artifacts, AVArtifact{ID: c.ArtifactID, Kind: c.Kind, URL: c.URL, Title: c.Title,
		AddedBy: c.DID, AddedNick: se.Nick, AddedAt: a.env.Time})
	return Result{Code: OK}
}

// endCall ends a live call: its participants leave, the channel is free for a new call, and the
// oldest ended calls beyond MaxRecentAVCalls are forgotten. by is who ended it (zero for the
// server); its DID is kept as the call's EndedBy.
func (a *Applier) endCall(call *AVCall, by SessionRef, reason string) {
	av := a.av()
	for i := range call.Participants {
		if call.Participants[i].LeftAt == 0 {
			call.Participants[i].LeftAt, call.Participants[i].Reason = a.env.Time, "call ended"
		}
	}
	call.EndedAt, call.EndedBy, call.EndReason = a.env.Time, by.DID, reason
	if av.Active[call.Channel] == call.ID {
		delete(av.Active, call.Channel)
	}
	av.Ended = append(av.Ended, call.ID)
	for len(av.Ended) > MaxRecentAVCalls {
		delete(av.Calls, av.Ended[0])
		av.Ended = slices.Delete(av.Ended, 0, 1)
	}
	a.emit(Event{Kind: EvAVEnded, Channel: call.Channel, MsgID: call.ID, Text: reason, Actor: by})
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
