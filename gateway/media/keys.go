package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// maxKeysBody bounds the body of POST /api/v1/keys and of a group key write.
const maxKeysBody = 256 << 10

// readJSON decodes a bounded JSON body into v, answering 400 itself.
func readJSON(c *gin.Context, v any) bool {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxKeysBody+1))
	if err != nil || len(body) > maxKeysBody {
		rest.WriteError(c, http.StatusBadRequest, "The body is unreadable or over 256 KiB")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		rest.WriteError(c, http.StatusBadRequest, "The body is not the expected JSON object: "+err.Error())
		return false
	}
	return true
}

// getBundle answers GET /api/v1/keys/{did}.
func (s *Service) getBundle(c *gin.Context) {
	var bundle json.RawMessage
	found := false
	s.cfg.State.Read(func(st *fsm.State) { bundle, found = fsmmedia.Of(st).PreKeyBundle(c.Param("did")) })
	if !found {
		rest.WriteError(c, http.StatusNotFound, "No pre-key bundle for this DID")
		return
	}
	c.JSON(http.StatusOK, gin.H{"bundle": bundle})
}

// putBundle answers POST /api/v1/keys: {did, bundle}, by the bearer of that DID only.
func (s *Service) putBundle(c *gin.Context) {
	var body struct {
		DID    string          `json:"did"`
		Bundle json.RawMessage `json:"bundle"`
	}
	if !readJSON(c, &body) {
		return
	}
	if body.DID == "" || len(body.Bundle) == 0 || bytes.Equal(body.Bundle, []byte("null")) {
		rest.WriteError(c, http.StatusBadRequest, "Both did and bundle are required")
		return
	}
	if body.DID != rest.DID(c) {
		rest.WriteError(c, http.StatusForbidden, "A pre-key bundle may only be published by the bearer of its DID")
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body.Bundle); err != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' {
		rest.WriteError(c, http.StatusBadRequest, "bundle must be a JSON object")
		return
	}
	if compact.Len() > fsmmedia.MaxPreKeyBundle {
		rest.WriteError(c, http.StatusBadRequest, "bundle is over 16 KiB")
		return
	}
	res, ok := s.propose(c, fsmmedia.SetPreKeyBundle{DID: body.DID, Bundle: compact.Bytes()})
	if !ok {
		return
	}
	switch res.Code {
	case fsm.OK:
		c.JSON(http.StatusOK, gin.H{"ok": true})
	case fsmmedia.ErrMediaFull:
		rest.WriteError(c, http.StatusInsufficientStorage, "This server holds the most pre-key bundles it keeps")
	default:
		rest.WriteError(c, http.StatusBadRequest, "The bundle was refused: "+res.Code.String())
	}
}

// groupKeyChannel reads the channel of a group key route and the caller's access to it,
// answering 400 or 404 itself.
func (s *Service) groupKeyChannel(c *gin.Context) (string, fsm.ChannelAccess, bool) {
	name, err := rest.ParseChannelName(c.Param("name"))
	if err != nil || strings.HasPrefix(c.Param("name"), "dm:") {
		rest.WriteError(c, http.StatusBadRequest, "Bad channel name")
		return "", fsm.ChannelAccess{}, false
	}
	var acc fsm.ChannelAccess
	s.cfg.State.Read(func(st *fsm.State) { acc = st.ChannelAccessOf(name, rest.DID(c)) })
	if !acc.Exists {
		rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
		return "", acc, false
	}
	return name, acc, true
}

// getGroupKeys answers GET /api/v1/channels/{name}/groupkeys: the caller's own sealed keys,
// newest epoch first; members, the founder and DID ops only.
func (s *Service) getGroupKeys(c *gin.Context) {
	name, acc, ok := s.groupKeyChannel(c)
	if !ok {
		return
	}
	if !acc.Member && !acc.Manager {
		rest.WriteError(c, http.StatusForbidden, "Only members of "+name+" may read its group keys")
		return
	}
	var keys []fsmmedia.SealedKey
	s.cfg.State.Read(func(st *fsm.State) { keys = fsmmedia.Of(st).GroupKeysFor(name, rest.DID(c)) })
	if keys == nil {
		keys = []fsmmedia.SealedKey{}
	}
	c.JSON(http.StatusOK, gin.H{"channel": name, "keys": keys})
}

// putGroupKeys answers POST /api/v1/channels/{name}/groupkeys: {epoch, keys: {did: sealed}},
// by the founder or a DID op; the channel becomes +E.
func (s *Service) putGroupKeys(c *gin.Context) {
	name, acc, ok := s.groupKeyChannel(c)
	if !ok {
		return
	}
	if !acc.Manager {
		rest.WriteError(c, http.StatusForbidden, "Only the founder or a DID operator of "+name+" may write its group keys")
		return
	}
	var body struct {
		Epoch *int64            `json:"epoch"`
		Keys  map[string]string `json:"keys"`
	}
	if !readJSON(c, &body) {
		return
	}
	if err := checkGroupKeys(body.Epoch, body.Keys); err != nil {
		rest.WriteError(c, http.StatusBadRequest, err.Error())
		return
	}
	res, ok := s.propose(c, fsmmedia.SetGroupKeys{Channel: name, DID: rest.DID(c), Epoch: *body.Epoch, Keys: body.Keys})
	if !ok {
		return
	}
	switch res.Code {
	case fsm.OK:
		c.JSON(http.StatusOK, gin.H{"ok": true, "epoch": *body.Epoch, "stored": res.Count})
	case fsm.ErrNoSuchChannel:
		rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
	case fsm.ErrChanOpNeeded:
		rest.WriteError(c, http.StatusForbidden, "Only the founder or a DID operator of "+name+" may write its group keys")
	case fsmmedia.ErrMediaFull:
		rest.WriteError(c, http.StatusInsufficientStorage, "This server holds the most group key channels it keeps")
	default:
		rest.WriteError(c, http.StatusBadRequest, "The group keys were refused: "+res.Code.String())
	}
}

// checkGroupKeys checks a group key write against the replicated caps.
func checkGroupKeys(epoch *int64, keys map[string]string) error {
	switch {
	case epoch == nil || *epoch < 0:
		return errors.New("epoch must be a non-negative integer")
	case len(keys) == 0:
		return errors.New("keys must map at least one member DID to its sealed key")
	case len(keys) > fsmmedia.MaxGroupKeyMembers:
		return errors.New("keys holds more than 1000 members")
	}
	for did, sealed := range keys {
		if !strings.HasPrefix(did, "did:") || len(did) > 2048 || sealed == "" || len(sealed) > fsmmedia.MaxSealedKey {
			return errors.New("each key must map a member DID to a sealed key of at most 2048 bytes")
		}
	}
	return nil
}
