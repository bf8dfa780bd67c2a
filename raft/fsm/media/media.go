package media

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Command types of this file (persisted; never renumber or reuse).
const (
	TypeSetMediaKey     fsm.CommandType = 40
	TypeRecordMedia     fsm.CommandType = 41
	TypeSetPreKeyBundle fsm.CommandType = 42
	TypeSetGroupKeys    fsm.CommandType = 43
	TypeSetMediaSpace   fsm.CommandType = 44
)

// Result codes of this file (persisted; never renumber or reuse).
const (
	ErrMediaExists      fsm.Code = 30 // RecordMedia of an id already recorded
	ErrMediaQuota       fsm.Code = 31 // the uploader's bytes would pass the quota the proposer stamped
	ErrMediaFull        fsm.Code = 32 // MaxMediaObjects, MaxPreKeyBundles or MaxGroupKeyChannels reached
	ErrMediaSpacesFull  fsm.Code = 33 // the server holds the maximum number of media spaces (507)
	ErrGroupKeyNotFound fsm.Code = 34 // reserved: a group key read of a channel without keys
)

const (
	// MaxMediaObjects bounds the uploads recorded in the replicated state.
	MaxMediaObjects = 200_000
	// MaxMediaIDLen and MaxMediaFilename bound a record's id and file name; MaxMediaMIME its type.
	MaxMediaIDLen    = 64
	MaxMediaFilename = 255
	MaxMediaMIME     = 127
	// MediaKeySize is the size of the capability key.
	MediaKeySize = 32
	// MaxPreKeyBundle bounds one pre-key bundle (its JSON bytes); MaxPreKeyBundles the DIDs with one.
	MaxPreKeyBundle  = 16 << 10
	MaxPreKeyBundles = 100_000
	// MaxGroupKeyMembers bounds the sealed keys of one epoch, MaxSealedKey one sealed key,
	// MaxGroupKeyEpochs the epochs a channel keeps (writing a newer one drops the oldest),
	// MaxGroupKeyChannels the channels with group keys.
	MaxGroupKeyMembers  = 1000
	MaxSealedKey        = 2048
	MaxGroupKeyEpochs   = 16
	MaxGroupKeyChannels = 50_000
	// MaxMediaSpaceRef bounds a media space's reference and type.
	MaxMediaSpaceRef = 512
)

// section is the media module's part of the state: nil until the first command.
var section = fsm.NewSection[MediaState]("media")

// module registers the media module with the state machine.
func module() fsm.Module {
	return fsm.Module{
		Section: section,
		Codes: map[fsm.Code]string{
			ErrMediaExists: "media-exists", ErrMediaQuota: "media-quota", ErrMediaFull: "media-full",
			ErrMediaSpacesFull: "media-spaces-full", ErrGroupKeyNotFound: "group-key-not-found",
			ErrMediaNotFound: "media-not-found", ErrMediaNotYours: "media-not-yours",
		},
		Commands: map[fsm.CommandType]fsm.CommandSpec{
			TypeSetMediaKey:     handle("set-media-key", 0, (*tx).setMediaKey),
			TypeRecordMedia:     handle("record-media", 0, (*tx).recordMedia).WithLevelOf(recordMediaLevel),
			TypeSetPreKeyBundle: handle("set-prekey-bundle", 0, (*tx).setPreKeyBundle),
			TypeSetGroupKeys:    handle("set-group-keys", 0, (*tx).setGroupKeys),
			TypeSetMediaSpace:   handle("set-media-space", 0, (*tx).setMediaSpace),
			TypeDeleteMedia:     handle("delete-media", 1, (*tx).deleteMedia),
			TypeAddMediaHolder:  handle("add-media-holder", 1, (*tx).addMediaHolder),
			TypeDropMediaHolder: handle("drop-media-holder", 1, (*tx).dropMediaHolder),
		},
	}
}

func init() { fsm.Register(module()) }

// recordMediaLevel: v0.1.0 decodes RecordMedia without Holders and Total, so it would record a
// replicated upload with only the node that took it, and ignore the deployment's budget, where
// the nodes of level 1 do not.
func recordMediaLevel(cmd fsm.Command) int {
	rm := cmd.(RecordMedia)
	if rm.Total != 0 || slices.ContainsFunc(rm.Object.Holders, func(h string) bool { return h != rm.Object.Holder }) {
		return 1
	}
	return 0
}

// tx is one media command being applied.
type tx struct{ *fsm.Applier }

// handle registers command type C, introduced at feature level level, applied by f.
func handle[C fsm.Command](name string, level int, f func(*tx, C) fsm.Result) fsm.CommandSpec {
	return fsm.Handle(name, level, func(a *fsm.Applier, c C) fsm.Result { return f(&tx{a}, c) })
}

// MediaState is the replicated media and key state (the module's section; nil until the first command).
type MediaState struct {
	// Key is the capability key: the first SetMediaKey wins.
	Key []byte `json:"key,omitempty"`
	// Objects are uploads by id.
	Objects map[string]*MediaObject `json:"objects,omitempty"`
	// Bundles are pre-key bundles by DID (opaque JSON objects).
	Bundles map[string]json.RawMessage `json:"bundles,omitempty"`
	// GroupKeys are the sealed group keys of encrypted channels, by folded channel name.
	GroupKeys map[string]*GroupKeyRing `json:"group_keys,omitempty"`
	// Spaces are media spaces by folded channel name.
	Spaces map[string]*MediaSpace `json:"spaces,omitempty"`

	// usage is each uploader's recorded bytes: derived from Objects, never encoded, rebuilt when
	// nil (after a restore).
	usage map[string]int64
	// total is the bytes of every upload (media_delete.go): derived, never encoded.
	total      int64
	totalKnown bool
}

// MediaObject is one upload's metadata. The bytes live on the disks of its holders (HolderSet),
// encrypted at rest under each holder's own key.
type MediaObject struct {
	ID     string `json:"id"`
	Holder string `json:"holder"` // the node that took the upload
	// Holders, when set, are every node that holds a copy, sorted (media_holders.go); nil means
	// Holder alone.
	Holders  []string `json:"holders,omitempty"`
	Size     int64    `json:"size"`
	MIME     string   `json:"mime"`
	Filename string   `json:"filename"`
	Private  bool     `json:"private,omitempty"`
	Uploader string   `json:"uploader"` // DID
	Channel  string   `json:"channel,omitempty"`
	Width    int      `json:"w,omitempty"`
	Height   int      `json:"h,omitempty"`
	At       int64    `json:"at"` // unix ms, from the proposer
}

// GroupKeyRing holds a channel's sealed group keys: epoch → member DID → sealed key.
type GroupKeyRing struct {
	Incarnation string                      `json:"incarnation,omitempty"`
	Epochs      map[int64]map[string]string `json:"epochs"`
}

// SealedKey is one member's sealed group key of one epoch.
type SealedKey struct {
	Epoch  int64  `json:"epoch"`
	Sealed string `json:"sealed"`
}

// MediaSpace is the media space an authority created for a channel.
type MediaSpace struct {
	Ref         string `json:"ref"`
	Type        string `json:"type"`
	Incarnation string `json:"incarnation,omitempty"`
	CreatedBy   string `json:"created_by"`
	At          int64  `json:"at"`
}

// SetMediaKey installs the capability key unless one is installed already (then NoChange).
type SetMediaKey struct {
	Key []byte `json:"key"`
}

// RecordMedia records an upload held by a node. Quota (bytes, 0 for none) is the per-uploader
// limit the proposer applies, stamped so that every replica decides alike.
type RecordMedia struct {
	Object MediaObject `json:"object"`
	Quota  int64       `json:"quota,omitempty"`
	// Total (bytes, 0 for none) is the deployment's media budget the proposer applies: beyond
	// it, ErrMediaFull.
	Total int64 `json:"total,omitempty"`
}

// SetPreKeyBundle stores (replaces) a DID's pre-key bundle.
type SetPreKeyBundle struct {
	DID    string          `json:"did"`
	Bundle json.RawMessage `json:"bundle"`
}

// SetGroupKeys stores one epoch of a channel's sealed group keys, written by DID (the founder or
// a DID op), and makes the channel +E.
type SetGroupKeys struct {
	Channel string            `json:"channel"`
	DID     string            `json:"did"`
	Epoch   int64             `json:"epoch"`
	Keys    map[string]string `json:"keys"`
}

// SetMediaSpace records the media space created for a channel unless it has one (NoChange); Max
// is the server's maximum number of media spaces (0: no maximum), stamped by the proposer.
type SetMediaSpace struct {
	Channel string `json:"channel"`
	Ref     string `json:"ref"`
	Type    string `json:"type"`
	DID     string `json:"did"`
	Max     int    `json:"max"`
}

func (SetMediaKey) CommandType() fsm.CommandType     { return TypeSetMediaKey }
func (RecordMedia) CommandType() fsm.CommandType     { return TypeRecordMedia }
func (SetPreKeyBundle) CommandType() fsm.CommandType { return TypeSetPreKeyBundle }
func (SetGroupKeys) CommandType() fsm.CommandType    { return TypeSetGroupKeys }
func (SetMediaSpace) CommandType() fsm.CommandType   { return TypeSetMediaSpace }

// media returns the media state, creating it on first use.
func (a *tx) media() *MediaState { return section.Make(a.Applier) }

// usageMap returns the per-uploader byte totals, rebuilding them after a restore.
func (m *MediaState) usageMap() map[string]int64 {
	if m.usage == nil {
		m.usage = map[string]int64{}
		for _, o := range m.Objects {
			m.usage[o.Uploader] += o.Size
		}
	}
	return m.usage
}

func (a *tx) setMediaKey(c SetMediaKey) fsm.Result {
	if len(c.Key) != MediaKeySize {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	m := a.media()
	if m.Key != nil {
		return fsm.Result{Code: fsm.NoChange}
	}
	m.Key = append([]byte(nil), c.Key...)
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) recordMedia(c RecordMedia) fsm.Result {
	o := c.Object
	if o.ID == "" || len(o.ID) > MaxMediaIDLen || o.Holder == "" || o.Uploader == "" || o.Size < 0 ||
		len(o.Filename) > MaxMediaFilename || len(o.MIME) > MaxMediaMIME || len(o.Channel) > fsm.MaxChannelLen ||
		o.Width < 0 || o.Height < 0 || c.Quota < 0 || c.Total < 0 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	holders, ok := normalHolders(o.Holder, o.Holders)
	if !ok {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	o.Holders = holders
	m := a.media()
	if m.Objects[o.ID] != nil {
		return fsm.Result{Code: ErrMediaExists}
	}
	if len(m.Objects) >= MaxMediaObjects {
		return fsm.Result{Code: ErrMediaFull}
	}
	usage := m.usageMap()
	if c.Quota > 0 && usage[o.Uploader]+o.Size > c.Quota {
		return fsm.Result{Code: ErrMediaQuota}
	}
	if c.Total > 0 && m.totalBytes()+o.Size > c.Total {
		return fsm.Result{Code: ErrMediaFull}
	}
	if m.Objects == nil {
		m.Objects = map[string]*MediaObject{}
	}
	m.totalBytes()
	o.At = a.Time()
	m.Objects[o.ID] = &o
	usage[o.Uploader] += o.Size
	m.total += o.Size
	return fsm.Result{Code: fsm.OK}
}

func (a *tx) setPreKeyBundle(c SetPreKeyBundle) fsm.Result {
	if c.DID == "" || len(c.Bundle) == 0 || len(c.Bundle) > MaxPreKeyBundle || !isJSONObject(c.Bundle) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	m := a.media()
	if _, known := m.Bundles[c.DID]; !known && len(m.Bundles) >= MaxPreKeyBundles {
		return fsm.Result{Code: ErrMediaFull}
	}
	if m.Bundles == nil {
		m.Bundles = map[string]json.RawMessage{}
	}
	m.Bundles[c.DID] = append(json.RawMessage(nil), c.Bundle...)
	return fsm.Result{Code: fsm.OK}
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(b, &v) == nil && v != nil
}

func (a *tx) setGroupKeys(c SetGroupKeys) fsm.Result {
	if c.Channel == "" || c.DID == "" || c.Epoch < 0 || len(c.Keys) == 0 || len(c.Keys) > MaxGroupKeyMembers {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	for did, sealed := range c.Keys {
		if did == "" || len(did) > 2048 || sealed == "" || len(sealed) > MaxSealedKey {
			return fsm.Result{Code: fsm.ErrInvalid}
		}
	}
	ch, ok := a.State().Channel(c.Channel)
	if !ok {
		return fsm.Result{Code: fsm.ErrNoSuchChannel}
	}
	if !a.State().ChannelAccessOf(c.Channel, c.DID).Manager {
		return fsm.Result{Code: fsm.ErrChanOpNeeded}
	}
	m := a.media()
	ring := m.GroupKeys[c.Channel]
	if ring == nil || ring.Incarnation != ch.Incarnation() {
		if ring == nil && len(m.GroupKeys) >= MaxGroupKeyChannels {
			return fsm.Result{Code: ErrMediaFull}
		}
		ring = &GroupKeyRing{Incarnation: ch.Incarnation(), Epochs: map[int64]map[string]string{}}
		if m.GroupKeys == nil {
			m.GroupKeys = map[string]*GroupKeyRing{}
		}
		m.GroupKeys[c.Channel] = ring
	}
	keys := make(map[string]string, len(c.Keys))
	for did, sealed := range c.Keys {
		keys[did] = sealed
	}
	ring.Epochs[c.Epoch] = keys
	for len(ring.Epochs) > MaxGroupKeyEpochs {
		oldest := c.Epoch
		for e := range ring.Epochs {
			oldest = min(oldest, e)
		}
		delete(ring.Epochs, oldest)
	}
	if !ch.Encrypted() {
		actor := fsm.SessionRef{DID: c.DID, Nick: c.DID, User: "groupkeys", Host: "api"}
		if ses := a.State().SessionsByDID(c.DID); len(ses) > 0 {
			actor = ses[0].Ref()
		}
		a.EncryptChannel(c.Channel, actor)
	}
	return fsm.Result{Code: fsm.OK, Count: len(keys)}
}

func (a *tx) setMediaSpace(c SetMediaSpace) fsm.Result {
	if c.Channel == "" || c.Ref == "" || len(c.Ref) > MaxMediaSpaceRef || len(c.Type) > MaxMediaSpaceRef || c.Max < 0 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	ch, ok := a.State().Channel(c.Channel)
	if !ok {
		return fsm.Result{Code: fsm.ErrNoSuchChannel}
	}
	m := a.media()
	if sp := m.Spaces[c.Channel]; sp != nil && sp.Incarnation == ch.Incarnation() {
		return fsm.Result{Code: fsm.NoChange}
	}
	if _, replacing := m.Spaces[c.Channel]; !replacing && c.Max > 0 && len(m.Spaces) >= c.Max {
		return fsm.Result{Code: ErrMediaSpacesFull}
	}
	if m.Spaces == nil {
		m.Spaces = map[string]*MediaSpace{}
	}
	m.Spaces[c.Channel] = &MediaSpace{Ref: c.Ref, Type: c.Type, Incarnation: ch.Incarnation(), CreatedBy: c.DID, At: a.Time()}
	return fsm.Result{Code: fsm.OK}
}

// sealedFor lists did's sealed keys in a ring, newest epoch first.
func (r *GroupKeyRing) sealedFor(did string) []SealedKey {
	var out []SealedKey
	for epoch, keys := range r.Epochs {
		if sealed, ok := keys[did]; ok {
			out = append(out, SealedKey{Epoch: epoch, Sealed: sealed})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Epoch > out[j].Epoch })
	return out
}
