package fsm

// Read markers (IRCv3 draft/read-marker): per DID, the time up to which the user has read each of
// its conversations, replicated so that every session of the DID, on any node, sees the same.

// TypeSetReadMarker is the command type of SetReadMarker.
const TypeSetReadMarker CommandType = 25

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeSetReadMarker: spec("set-read-marker", (*Applier).setReadMarker)})
}

const (
	// MaxReadMarkers bounds the conversations whose marker one DID keeps.
	MaxReadMarkers = 2000
	// MaxReadMarkerTarget bounds a marker's target (a folded channel name, a DID or a nick).
	MaxReadMarkerTarget = 256
)

// SetReadMarker moves a DID's read marker for a target forward to At (unix ms). A marker never
// moves back: an older time changes nothing.
type SetReadMarker struct {
	DID    string `json:"did"`
	Target string `json:"target"`
	At     int64  `json:"at"`
	// Session is the session that moved the marker, if any (its gateway answers it in line).
	Session string `json:"session,omitempty"`
}

func (SetReadMarker) CommandType() CommandType { return TypeSetReadMarker }

// ReadMarker is the DID's marker for target (unix ms), 0 when none is set.
func (s *State) ReadMarker(did, target string) int64 {
	return s.readMarkers[did][target]
}

func (a *Applier) setReadMarker(c SetReadMarker) Result {
	if c.DID == "" || c.Target == "" || len(c.Target) > MaxReadMarkerTarget || c.At <= 0 {
		return Result{Code: ErrInvalid}
	}
	markers := a.st.readMarkers[c.DID]
	if c.At <= markers[c.Target] {
		return Result{Code: NoChange}
	}
	if markers == nil {
		if a.st.readMarkers == nil {
			a.st.readMarkers = map[string]map[string]int64{}
		}
		markers = map[string]int64{}
		a.st.readMarkers[c.DID] = markers
	}
	if _, known := markers[c.Target]; !known && len(markers) >= MaxReadMarkers {
		return Result{Code: ErrListFull}
	}
	markers[c.Target] = c.At
	a.emit(Event{Kind: EvReadMarker, Actor: SessionRef{ID: c.Session, DID: c.DID}, Channel: c.Target, MarkerAt: c.At})
	return Result{Code: OK}
}
