package rest

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
)

// ActorDetails adds what another surface knows of a DID to GET /api/v1/actors/{did}: fields to
// merge into the Actor object (never replacing one of its own), and whether the DID is known
// there, which keeps a DID that resolves nowhere from being a 404.
type ActorDetails func(did string) (fields map[string]any, known bool)

// AddActorDetails registers an ActorDetails. Call it before the server handles requests.
func (s *Server) AddActorDetails(f ActorDetails) { s.actorDetails = append(s.actorDetails, f) }

func (s *Server) moreActorDetails(did string) (map[string]any, bool) {
	var out map[string]any
	known := false
	for _, f := range s.actorDetails {
		fields, k := f(did)
		known = known || k
		for name, v := range fields {
			if out == nil {
				out = map[string]any{}
			}
			out[name] = v
		}
	}
	return out, known
}

// writeActor answers the actor with the extra fields merged in.
func writeActor(c *gin.Context, a Actor, extra map[string]any) {
	if len(extra) == 0 {
		c.PureJSON(http.StatusOK, a)
		return
	}
	body, err := json.Marshal(a)
	var obj map[string]any
	if err == nil {
		err = json.Unmarshal(body, &obj)
	}
	if err != nil || obj == nil {
		WriteError(c, http.StatusInternalServerError, "Could not encode the actor")
		return
	}
	for name, v := range extra {
		if _, own := obj[name]; !own {
			obj[name] = v
		}
	}
	c.PureJSON(http.StatusOK, obj)
}

// ChannelParam reads the channel named by a path parameter or query value as the read routes
// do (with or without '#', any case) and returns its folded name; it answers 400 (403 for a DM
// venue) itself and returns false.
func ChannelParam(c *gin.Context, raw string) (string, bool) { return channelParam(c, raw) }

// LimitParam reads the limit query parameter of a list route: absent → def, a positive integer →
// itself capped at max; anything else answers 400 and returns false.
func LimitParam(c *gin.Context, def, max int) (int, bool) {
	raw, present := c.GetQuery("limit")
	n, err := parseLimit(raw, present, pageLimits{def: def, max: max})
	if err != nil {
		WriteError(c, http.StatusBadRequest, err.Error())
		return 0, false
	}
	return n, true
}
