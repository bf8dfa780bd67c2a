package av

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
	"github.com/palaver-chat/palaver/sfu"
)

// Close codes of the signalling WebSocket beyond the standard ones.
const (
	// CloseRemoved: the roster no longer has the account (it left the channel, was kicked or
	// banned, or the call ended); the reason says which.
	CloseRemoved websocket.StatusCode = 4001
	// CloseRefused: the roster refused the join.
	CloseRefused websocket.StatusCode = 4003
)

var errQueueFull = errors.New("the client does not read its signals")

// serveSignal runs GET /api/v1/av/sessions/{id}/ws?token=…: the signalling session of one
// participant, on the node hosting the call.
func (g *Gateway) serveSignal(c *gin.Context) {
	id := c.Param("id")
	cl, err := parseToken(g.cfg.Keys, c.Query("token"), g.cfg.Now())
	if err != nil {
		rest.WriteError(c, http.StatusUnauthorized, "A valid signalling token is needed ("+err.Error()+"); get one from /api/v1/av/sessions/"+id+"/token")
		return
	}
	if cl.Call != id {
		rest.WriteError(c, http.StatusForbidden, "This token is for another call")
		return
	}
	var call fsmav.AVCall
	var found bool
	code := fsm.OK
	g.cfg.State.Read(func(st *fsm.State) {
		if call, found = fsmav.Of(st).Call(id); found {
			code = fsmav.Of(st).Eligible(call.Channel, cl.Account)
		}
	})
	switch {
	case !found || !call.Live():
		rest.WriteError(c, http.StatusNotFound, "The call "+id+" has ended")
		return
	case call.Channel != cl.Channel:
		rest.WriteError(c, http.StatusForbidden, "This token is for another channel")
		return
	case call.Host != g.cfg.Node:
		msg := "This call is hosted by node " + call.Host
		if g.cfg.HostURL != nil {
			if base, ok := g.cfg.HostURL(call.Host); ok {
				msg += " at " + wsURL(base)
			}
		}
		rest.WriteError(c, http.StatusMisdirectedRequest, msg)
		return
	case code != fsm.OK:
		status, msg := refusal(code, call.Channel)
		rest.WriteError(c, status, msg)
		return
	}
	if !strings.EqualFold(c.GetHeader("Upgrade"), "websocket") {
		c.Header("Upgrade", "websocket")
		rest.WriteError(c, http.StatusUpgradeRequired, "This is the call's signalling WebSocket; send a WebSocket upgrade request")
		return
	}
	// The token authorizes the connection (no cookie does), so any origin may use it.
	if !g.track() {
		rest.WriteError(c, http.StatusServiceUnavailable, "The server is shutting down")
		return
	}
	defer g.wg.Done()
	ws, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		g.log.Debug("signalling upgrade failed", "err", err)
		c.Abort()
		return
	}
	ws.SetReadLimit(MaxSignalBytes)
	g.runSession(ws, call, cl.Account)
}

// runSession joins the roster and the forwarding unit and relays signals until either side
// ends.
func (g *Gateway) runSession(ws *websocket.Conn, call fsmav.AVCall, did string) {
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	res, err := g.cfg.Propose.Propose(ctx, fsmav.AVJoin{CallID: call.ID, DID: did})
	if err != nil || res.Code != fsm.OK && res.Code != fsm.NoChange {
		msg := "the call could not be joined now"
		if err == nil {
			_, msg = refusal(res.Code, call.Channel)
		}
		writeSignal(ctx, ws, sfu.Signal{Type: sfu.SignalError, Message: msg})
		ws.Close(CloseRefused, truncate(msg))
		return
	}
	queue := make(chan sfu.Signal, sendQueue)
	send := func(sig sfu.Signal) error {
		select {
		case queue <- sig:
			return nil
		default:
			return errQueueFull
		}
	}
	p, err := g.cfg.SFU.Join(call.Channel, call.ID, did, send)
	if err != nil {
		msg := "the call could not be joined: " + err.Error()
		writeSignal(ctx, ws, sfu.Signal{Type: sfu.SignalError, Message: msg})
		ws.Close(CloseRefused, truncate(msg))
		g.participantLeft(call.Channel, call.ID, did, "could not connect")
		return
	}
	// The writer: signals in order, until the participant or the connection ends.
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for {
			select {
			case sig := <-queue:
				if err := writeSignal(ctx, ws, sig); err != nil {
					cancel()
					return
				}
			case <-p.Done():
				ws.Close(CloseRemoved, truncate(p.Reason()))
				cancel()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			break
		}
		var sig sfu.Signal
		if err := json.Unmarshal(data, &sig); err != nil {
			_ = send(sfu.Signal{Type: sfu.SignalError, Message: "not a JSON signal: " + err.Error()})
			continue
		}
		if err := p.Handle(sig); err != nil {
			if errors.Is(err, sfu.ErrClosed) {
				break
			}
			_ = send(sfu.Signal{Type: sfu.SignalError, Message: err.Error()})
		}
	}
	p.Leave("left the call")
	cancel()
	<-writerDone
	ws.Close(websocket.StatusNormalClosure, "")
}

func writeSignal(ctx context.Context, ws *websocket.Conn, sig sfu.Signal) error {
	data, err := json.Marshal(sig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return ws.Write(ctx, websocket.MessageText, data)
}

// truncate fits a close reason in a control frame.
func truncate(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}

// participantLeft is the forwarding unit's OnLeave: the account's last connection to the call
// ended by itself, so it leaves the roster.
func (g *Gateway) participantLeft(channel, callID, did, reason string) {
	if g.cfg.SFU != nil && g.cfg.SFU.HasAccount(channel, did) {
		return // another device of the account is still in the call
	}
	g.propose(fsmav.AVLeave{CallID: callID, DID: did, Reason: reason})
}

// OnLeave is the function to give the forwarding unit as Config.OnLeave.
func (g *Gateway) OnLeave(channel, callID, account, reason string) {
	g.participantLeft(channel, callID, account, reason)
}
