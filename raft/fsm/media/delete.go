package media

import "github.com/palaver-chat/palaver/raft/fsm"

// Deleting uploads and the deployment's media budget. An upload is deleted by its uploader, by a
// server operator (an operator session of the DID, or ServerOper: the proposing node counts the
// DID among its configured operators) or by its holder node once the retention it applies has
// passed (Expired). The bytes are removed by the holder, which drops objects no record names.

// TypeDeleteMedia deletes an upload's record.
const TypeDeleteMedia fsm.CommandType = 45

// Result codes of deletions.
const (
	ErrMediaNotFound fsm.Code = 35 // no upload with that id
	ErrMediaNotYours fsm.Code = 36 // the deleter is neither the uploader nor a server operator
)

// DeleteMedia deletes the record of upload ID, on DID's word (the uploader or a server operator),
// or, with Expired, on the retention of a node that holds a copy (Holder names it; no DID).
type DeleteMedia struct {
	ID         string `json:"id"`
	DID        string `json:"did,omitempty"`
	ServerOper bool   `json:"server_oper,omitempty"`
	Expired    bool   `json:"expired,omitempty"`
	Holder     string `json:"holder,omitempty"`
}

func (DeleteMedia) CommandType() fsm.CommandType { return TypeDeleteMedia }

func (a *tx) deleteMedia(c DeleteMedia) fsm.Result {
	if c.ID == "" || len(c.ID) > MaxMediaIDLen || c.Expired == (c.DID != "") {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	m := a.media()
	o := m.Objects[c.ID]
	if o == nil {
		return fsm.Result{Code: ErrMediaNotFound}
	}
	switch {
	case c.Expired:
		if !o.HeldBy(c.Holder) {
			return fsm.Result{Code: ErrMediaNotYours}
		}
	case c.DID != o.Uploader && !c.ServerOper && !didIsOper(a.State(), c.DID):
		return fsm.Result{Code: ErrMediaNotYours}
	}
	usage := m.usageMap()
	if usage[o.Uploader] -= o.Size; usage[o.Uploader] <= 0 {
		delete(usage, o.Uploader)
	}
	m.totalBytes()
	m.total -= o.Size
	delete(m.Objects, c.ID)
	return fsm.Result{Code: fsm.OK}
}

// didIsOper reports whether a session of did is a server operator.
func didIsOper(s *fsm.State, did string) bool {
	for _, se := range s.SessionsByDID(did) {
		if se.Oper {
			return true
		}
	}
	return false
}

// totalBytes is the bytes of every upload recorded, derived (rebuilt after a restore).
func (m *MediaState) totalBytes() int64 {
	if !m.totalKnown {
		m.total, m.totalKnown = 0, true
		for _, o := range m.Objects {
			m.total += o.Size
		}
	}
	return m.total
}
