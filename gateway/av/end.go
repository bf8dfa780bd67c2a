package av

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
)

// EndRequest is the optional body of POST /api/v1/sessions/{id}/end.
type EndRequest struct {
	Reason string `json:"reason"`
}

// maxEndBody bounds the body of an end: a reason at its limit, escaped.
const maxEndBody = 4096

// validReason reports why an end or leave reason is refused, or "" when it is fine.
func validReason(reason string) string {
	switch {
	case len(reason) > fsmav.MaxAVReason:
		return fmt.Sprintf("the reason is longer than %d bytes", fsmav.MaxAVReason)
	case !utf8.ValidString(reason) || strings.ContainsFunc(reason, unicode.IsControl):
		return "the reason must be UTF-8 text without control characters"
	}
	return ""
}

// serverOper reports whether did is one of this node's configured operator DIDs.
func (g *Gateway) serverOper(did string) bool {
	return did != "" && slices.Contains(g.cfg.OperDIDs, did)
}

// endSession runs POST /api/v1/sessions/{id}/end: an operator ends the call for everyone.
func (g *Gateway) endSession(c *gin.Context) {
	var req EndRequest
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxEndBody))
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		rest.WriteError(c, http.StatusBadRequest, `The body must be empty or JSON {"reason":"..."} of at most 4096 bytes`)
		return
	}
	if why := validReason(req.Reason); why != "" {
		rest.WriteError(c, http.StatusBadRequest, "Not a valid end: "+why)
		return
	}
	id, did := c.Param("id"), rest.DID(c)
	var call fsmav.AVCall
	var found, may bool
	g.cfg.State.Read(func(st *fsm.State) {
		if call, found = fsmav.Of(st).Call(id); found {
			may = fsmav.Of(st).MayEnd(call.Channel, did, "")
		}
	})
	oper := g.serverOper(did)
	switch {
	case !found:
		rest.WriteError(c, http.StatusNotFound, "No call "+id+" (ended calls are kept for a while only)")
		return
	case !call.Live():
		rest.WriteError(c, http.StatusConflict, "The call "+id+" has ended already")
		return
	case !may && !oper:
		status, msg := refusal(fsmav.ErrAVNotOperator, call.Channel)
		rest.WriteError(c, status, msg)
		return
	}
	res, err := g.cfg.Propose.Propose(c.Request.Context(), fsmav.AVOperatorEnd{CallID: id, DID: did, ServerOper: oper, Reason: req.Reason})
	if err != nil {
		g.log.Warn("ending a call", "call", id, "err", err)
		rest.WriteError(c, http.StatusServiceUnavailable, "The call could not be ended now; try again")
		return
	}
	if res.Code == fsmav.ErrAVNoCall {
		rest.WriteError(c, http.StatusConflict, "The call "+id+" has ended already")
		return
	}
	if res.Code != fsm.OK {
		status, msg := refusal(res.Code, call.Channel)
		rest.WriteError(c, status, msg)
		return
	}
	g.cfg.State.Read(func(st *fsm.State) { call, _ = fsmav.Of(st).Call(id) })
	c.PureJSON(http.StatusOK, sessionOf(call))
}
