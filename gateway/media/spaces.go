package media

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/fetchguard"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// maxAuthorityAnswer and maxRecord bound the JSON read from the authority and from a PDS.
const (
	maxAuthorityAnswer = 16 << 10
	maxRecord          = 64 << 10
)

// spaceAnswer is the media-space answer, and what the authority answers.
type spaceAnswer struct {
	Channel string `json:"channel"`
	Ref     string `json:"ref"`
	Type    string `json:"type"`
	Created bool   `json:"created"`
}

// mediaSpace answers GET /api/v1/media-space?channel=: the channel's space, created by the
// authority on first use, for members (and the founder and DID ops) only.
func (s *Service) mediaSpace(c *gin.Context) {
	if s.opts.SpaceAuthority == "" {
		rest.WriteError(c, http.StatusNotFound, "Media spaces are not configured on this server")
		return
	}
	raw := c.Query("channel")
	if raw == "" {
		rest.WriteError(c, http.StatusBadRequest, "channel is required")
		return
	}
	name, err := rest.ParseChannelName(raw)
	if err != nil {
		rest.WriteError(c, http.StatusBadRequest, "Bad channel name: "+err.Error())
		return
	}
	did := rest.DID(c)
	var acc fsm.ChannelAccess
	var sp fsmmedia.MediaSpace
	var has bool
	var count int
	s.cfg.State.Read(func(st *fsm.State) {
		acc = st.ChannelAccessOf(name, did)
		sp, has = fsmmedia.Of(st).SpaceOf(name)
		count = fsmmedia.Of(st).SpaceCount()
	})
	switch {
	case !acc.Exists:
		rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
		return
	case !acc.Member && !acc.Manager:
		rest.WriteError(c, http.StatusForbidden, "Only members of "+name+" may use its media space")
		return
	case has:
		c.JSON(http.StatusOK, spaceAnswer{Channel: name, Ref: sp.Ref, Type: sp.Type})
		return
	case s.opts.MaxSpaces > 0 && count >= s.opts.MaxSpaces:
		rest.WriteError(c, http.StatusInsufficientStorage, "This server holds its maximum number of media spaces")
		return
	}
	created, err := s.createSpace(c.Request.Context(), name, did)
	if err != nil {
		s.log.Warn("media space authority", "channel", name, "err", err)
		rest.WriteError(c, http.StatusBadGateway, "The media space authority did not create the space")
		return
	}
	res, ok := s.propose(c, fsmmedia.SetMediaSpace{Channel: name, Ref: created.Ref, Type: created.Type, DID: did, Max: s.opts.MaxSpaces})
	if !ok {
		return
	}
	switch res.Code {
	case fsm.OK, fsm.NoChange: // NoChange: another request created it first; answer that one
		s.cfg.State.Read(func(st *fsm.State) { sp, has = fsmmedia.Of(st).SpaceOf(name) })
		if !has {
			rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
			return
		}
		c.JSON(http.StatusOK, spaceAnswer{Channel: name, Ref: sp.Ref, Type: sp.Type, Created: res.Code == fsm.OK})
	case fsmmedia.ErrMediaSpacesFull:
		rest.WriteError(c, http.StatusInsufficientStorage, "This server holds its maximum number of media spaces")
	case fsm.ErrNoSuchChannel:
		rest.WriteError(c, http.StatusNotFound, "No such channel: "+name)
	default:
		rest.WriteError(c, http.StatusBadGateway, "The media space was refused: "+res.Code.String())
	}
}

// createSpace asks the authority for a space: POST <authority>/spaces with
// {channel, server, creator}, answered {ref, type}. The authority is the operator's own service,
// so it is reached with a plain client (bounded in time and size), not the guard.
func (s *Service) createSpace(ctx context.Context, channel, did string) (spaceAnswer, error) {
	body, _ := json.Marshal(map[string]string{"channel": channel, "server": s.cfg.BaseURL, "creator": did})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(s.opts.SpaceAuthority, "/")+"/spaces", bytes.NewReader(body))
	if err != nil {
		return spaceAnswer{}, fmt.Errorf("authority request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.spaces.Do(req)
	if err != nil {
		return spaceAnswer{}, fmt.Errorf("authority: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return spaceAnswer{}, fmt.Errorf("authority answered %s", resp.Status)
	}
	data, err := fetchguard.ReadAll(resp.Body, maxAuthorityAnswer)
	if err != nil {
		return spaceAnswer{}, fmt.Errorf("authority answer: %w", err)
	}
	var out spaceAnswer
	if err := json.Unmarshal(data, &out); err != nil {
		return spaceAnswer{}, fmt.Errorf("authority answer: %w", err)
	}
	if out.Ref == "" || len(out.Ref) > fsmmedia.MaxMediaSpaceRef || len(out.Type) > fsmmedia.MaxMediaSpaceRef {
		return spaceAnswer{}, fmt.Errorf("authority answer without a usable ref")
	}
	return out, nil
}

// atURI is a record URI at://<did>/<collection>/<rkey>.
type atURI struct{ did, collection, rkey string }

var (
	nsidPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*(\.[a-zA-Z0-9-]+){2,}$`)
	rkeyPattern = regexp.MustCompile(`^[A-Za-z0-9._~:-]{1,512}$`)
	didPattern  = regexp.MustCompile(`^did:[a-z]+:[a-zA-Z0-9._:%-]+$`)
)

// parseRef decodes a space-media ref: a base64url at:// record URI.
func parseRef(ref string) (atURI, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(ref, "="))
	if err != nil {
		return atURI{}, fmt.Errorf("ref is not base64url")
	}
	rest, ok := strings.CutPrefix(string(raw), "at://")
	if !ok {
		return atURI{}, fmt.Errorf("ref is not an at:// URI")
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || len(parts[0]) > 2048 || !didPattern.MatchString(parts[0]) || !nsidPattern.MatchString(parts[1]) || !rkeyPattern.MatchString(parts[2]) ||
		parts[2] == "." || parts[2] == ".." {
		return atURI{}, fmt.Errorf("ref must be at://<did>/<collection>/<rkey>")
	}
	return atURI{did: parts[0], collection: parts[1], rkey: parts[2]}, nil
}

// spaceRecord is the part of a media record the server reads: the space it was posted to and the
// blob.
type spaceRecord struct {
	Value struct {
		Space string `json:"space"`
		Blob  struct {
			Ref struct {
				Link string `json:"$link"`
			} `json:"ref"`
			MimeType string `json:"mimeType"`
		} `json:"blob"`
	} `json:"value"`
}

var cidPattern = regexp.MustCompile(`^[a-zA-Z0-9]{8,128}$`)

// spaceMedia answers GET /api/v1/space-media/{ref}/{filename}: the blob of a media record,
// fetched from the uploader's PDS through the guard, for a caller who holds the record's channel.
func (s *Service) spaceMedia(c *gin.Context) {
	uri, err := parseRef(c.Param("ref"))
	if err != nil {
		rest.WriteError(c, http.StatusBadRequest, "Bad ref: "+err.Error())
		return
	}
	if s.cfg.PDS == nil {
		rest.WriteError(c, http.StatusNotFound, "Media records cannot be resolved on this server")
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.opts.FetchTimeout)
	defer cancel()
	pds, err := s.cfg.PDS.PDS(ctx, uri.did)
	if err != nil {
		rest.WriteError(c, http.StatusNotFound, "The uploader's PDS cannot be found")
		return
	}
	q := url.Values{"repo": {uri.did}, "collection": {uri.collection}, "rkey": {uri.rkey}}
	resp, err := s.guard.Get(ctx, strings.TrimRight(pds, "/")+"/xrpc/com.atproto.repo.getRecord?"+q.Encode(), nil)
	if err != nil {
		s.fetchFailed(c, "space", err)
		return
	}
	data, err := fetchguard.ReadAll(resp.Body, maxRecord)
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest {
		s.metrics.fetches.WithLabelValues("space", "not_found").Inc()
		rest.WriteError(c, http.StatusNotFound, "No such media record")
		return
	}
	var rec spaceRecord
	if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(data, &rec) != nil {
		s.metrics.fetches.WithLabelValues("space", "upstream_error").Inc()
		rest.WriteError(c, http.StatusBadGateway, "The uploader's PDS did not give the media record")
		return
	}
	cid := rec.Value.Blob.Ref.Link
	if rec.Value.Space == "" || !cidPattern.MatchString(cid) {
		rest.WriteError(c, http.StatusNotFound, "The record is not a media space record")
		return
	}
	var channel string
	var found bool
	var acc fsm.ChannelAccess
	s.cfg.State.Read(func(st *fsm.State) {
		if channel, found = fsmmedia.Of(st).SpaceByRef(rec.Value.Space); found {
			acc = st.ChannelAccessOf(channel, rest.DID(c))
		}
	})
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, "The record's media space is not one of this server's")
		return
	case !acc.Member && !acc.Manager:
		rest.WriteError(c, http.StatusForbidden, "Only members of the space's channel may read its media")
		return
	}
	header := http.Header{}
	if r := c.GetHeader("Range"); r != "" {
		header.Set("Range", r)
	}
	blobURL := strings.TrimRight(pds, "/") + getBlobPath + "?" + url.Values{"did": {uri.did}, "cid": {cid}}.Encode()
	blobCtx, cancelBlob := context.WithTimeout(c.Request.Context(), s.opts.FetchTimeout+5*time.Second)
	defer cancelBlob()
	resp, err = s.guard.Get(blobCtx, blobURL, header)
	if err != nil {
		s.fetchFailed(c, "space", err)
		return
	}
	defer resp.Body.Close()
	s.relay(c, "space", resp, rec.Value.Blob.MimeType)
}
