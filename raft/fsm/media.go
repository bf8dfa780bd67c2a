package fsm

import (
	"encoding/json"
	"sort"
)

// Media and keys for encrypted channels: what every node must agree on so that any node can serve
// any of it. Uploads are recorded here by their metadata only (the bytes stay on the holder node's
// disk); the media capability key (the HMAC key of capability URLs, drawn once by a proposer);
// pre-key bundles per DID; sealed group keys per channel, epoch and member; media spaces per
// channel. Every collection is bounded by the constants below.

// Command types of this file (persisted; never renumber or reuse).
const (
	TypeSetMediaKey     CommandType = 40
	TypeRecordMedia     CommandType = 41
	TypeSetPreKeyBundle CommandType = 42
	TypeSetGroupKeys    CommandType = 43
	TypeSetMediaSpace   CommandType = 44
)

// Result codes of this file (persisted; never renumber or reuse).
const (
	ErrMediaExists      Code = 30 // RecordMedia of an id already recorded
	ErrMediaQuota       Code = 31 // the uploader's bytes would pass the quota the proposer stamped
	ErrMediaFull        Code = 32 // MaxMediaObjects, MaxPreKeyBundles or MaxGroupKeyChannels reached
	ErrMediaSpacesFull  Code = 33 // the server holds the maximum number of media spaces (507)
	ErrGroupKeyNotFound Code = 34 // reserved: a group key read of a channel without keys
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

func init() {
	registerCommands(map[CommandType]CommandSpec{
		TypeSetMediaKey:     spec("set-media-key", (*Applier).setMediaKey),
		TypeRecordMedia:     spec("record-media", (*Applier).recordMedia),
		TypeSetPreKeyBundle: spec("set-prekey-bundle", (*Applier).setPreKeyBundle),
		TypeSetGroupKeys:    spec("set-group-keys", (*Applier).setGroupKeys),
		TypeSetMediaSpace:   spec("set-media-space", (*Applier).setMediaSpace),
	})
	for code, name := range map[Code]string{
		ErrMediaExists: "media-exists", ErrMediaQuota: "media-quota", ErrMediaFull: "media-full",
		ErrMediaSpacesFull: "media-spaces-full", ErrGroupKeyNotFound: "group-key-not-found",
	} {
		nameCode(code, name)
	}
}

// MediaState is the replicated media and key state (State.Media; nil until the first command).
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

func (SetMediaKey) CommandType() CommandType     { return TypeSetMediaKey }
func (RecordMedia) CommandType() CommandType     { return TypeRecordMedia }
func (SetPreKeyBundle) CommandType() CommandType { return TypeSetPreKeyBundle }
func (SetGroupKeys) CommandType() CommandType    { return TypeSetGroupKeys }
func (SetMediaSpace) CommandType() CommandType   { return TypeSetMediaSpace }

// media returns the media state, creating it on first use.
func (a *Applier) media() *MediaState {
	if a.st.media == nil {
		a.st.media = &MediaState{}
	}
	return a.st.media
}

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

func (a *Applier) setMediaKey(c SetMediaKey) Result {
	if len(c.Key) != MediaKeySize {
		return Result{Code: ErrInvalid}
	}
	m := a.media()
	if m.Key != nil {
		return Result{Code: NoChange}
	}
	m.Key = append([]byte(nil), c.Key...)
	return Result{Code: OK}
}

func (a *Applier) recordMedia(c RecordMedia) Result {
	o := c.Object
	if o.ID == "" || len(o.ID) > MaxMediaIDLen || o.Holder == "" || o.Uploader == "" || o.Size < 0 ||
		len(o.Filename) > MaxMediaFilename || len(o.MIME) > MaxMediaMIME || len(o.Channel) > MaxChannelLen ||
		o.Width < 0 || o.Height < 0 || c.Quota < 0 || c.Total < 0 {
		return Result{Code: ErrInvalid}
	}
	holders, ok := normalHolders(o.Holder, o.Holders)
	if !ok {
		return Result{Code: ErrInvalid}
	}
	o.Holders = holders
	m := a.media()
	if m.Objects[o.ID] != nil {
		return Result{Code: ErrMediaExists}
	}
	if len(m.Objects) >= MaxMediaObjects {
		return Result{Code: ErrMediaFull}
	}
	usage := m.usageMap()
	if c.Quota > 0 && usage[o.Uploader]+o.Size > c.Quota {
		return Result{Code: ErrMediaQuota}
	}
	if c.Total > 0 && m.totalBytes()+o.Size > c.Total {
		return Result{Code: ErrMediaFull}
	}
	if m.Objects == nil {
		m.Objects = map[string]*MediaObject{}
	}
	m.totalBytes()
	o.At = a.env.Time
	m.Objects[o.ID] = &o
	usage[o.Uploader] += o.Size
	m.total += o.Size
	return Result{Code: OK}
}

func (a *Applier) setPreKeyBundle(c SetPreKeyBundle) Result {
	if c.DID == "" || len(c.Bundle) == 0 || len(c.Bundle) > MaxPreKeyBundle || !isJSONObject(c.Bundle) {
		return Result{Code: ErrInvalid}
	}
	m := a.media()
	if _, known := m.Bundles[c.DID]; !known && len(m.Bundles) >= MaxPreKeyBundles {
		return Result{Code: ErrMediaFull}
	}
	if m.Bundles == nil {
		m.Bundles = map[string]json.RawMessage{}
	}
	m.Bundles[c.DID] = append(json.RawMessage(nil), c.Bundle...)
	return Result{Code: OK}
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(b, &v) == nil && v != nil
}

func (a *Applier) setGroupKeys(c SetGroupKeys) Result {
	if c.Channel == "" || c.DID == "" || c.Epoch < 0 || len(c.Keys) == 0 || len(c.Keys) > MaxGroupKeyMembers {
		return Result{Code: ErrInvalid}
	}
	for did, sealed := range c.Keys {
		if did == "" || len(did) > 2048 || sealed == "" || len(sealed) > MaxSealedKey {
			return Result{Code: ErrInvalid}
		}
	}
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	if c.DID != ch.FounderDID && !ch.didOps[c.DID] {
		return Result{Code: ErrChanOpNeeded}
	}
	m := a.media()
	ring := m.GroupKeys[c.Channel]
	if ring == nil || ring.Incarnation != ch.Incarnation {
		if ring == nil && len(m.GroupKeys) >= MaxGroupKeyChannels {
			return Result{Code: ErrMediaFull}
		}
		ring = &GroupKeyRing{Incarnation: ch.Incarnation, Epochs: map[int64]map[string]string{}}
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
	if !ch.Encrypted {
		ch.Encrypted = true
		actor := SessionRef{DID: c.DID, Nick: c.DID, User: "groupkeys", Host: "api"}
		if ses := a.st.SessionsByDID(c.DID); len(ses) > 0 {
			actor = ses[0].Ref()
		}
		a.emit(Event{Kind: EvMode, Actor: actor, Channel: ch.Name, Modes: []ModeChange{{Add: true, Mode: "E"}}})
	}
	return Result{Code: OK, Count: len(keys)}
}

func (a *Applier) setMediaSpace(c SetMediaSpace) Result {
	if c.Channel == "" || c.Ref == "" || len(c.Ref) > MaxMediaSpaceRef || len(c.Type) > MaxMediaSpaceRef || c.Max < 0 {
		return Result{Code: ErrInvalid}
	}
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	m := a.media()
	if sp := m.Spaces[c.Channel]; sp != nil && sp.Incarnation == ch.Incarnation {
		return Result{Code: NoChange}
	}
	if _, replacing := m.Spaces[c.Channel]; !replacing && c.Max > 0 && len(m.Spaces) >= c.Max {
		return Result{Code: ErrMediaSpacesFull}
	}
	if m.Spaces == nil {
		m.Spaces = map[string]*MediaSpace{}
	}
	m.Spaces[c.Channel] = &MediaSpace{Ref: c.Ref, Type: c.Type, Incarnation: ch.Incarnation, CreatedBy: c.DID, At: a.env.Time}
	return Result{Code: OK}
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
