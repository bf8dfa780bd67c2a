package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func pinChannel(i int) string { return fmt.Sprintf("#pin%d", i) }

// pinWork pins and unpins messages of one channel (stored at setup, fewer than the server's 50
// pins) as a server operator, and reads the pin list: with PINS after the AWAY fence, or from
// the REST API with ?consistency=strong. A write is acknowledged by the PONG that follows it;
// its answer is "already pinned" or "not pinned" when the server's NOTICE says so, "ok" otherwise.
type pinWork struct {
	channel string
	msgids  []string
	http    *http.Client
}

func (w *pinWork) step(o *objectClient, cl *ircclient.Client) error {
	switch o.rng.IntN(4) {
	case 0:
		return w.read(o, cl)
	case 1:
		return w.readREST(o)
	}
	msgid := w.msgids[o.rng.IntN(len(w.msgids))]
	verb := pinVerb
	if o.rng.IntN(2) == 0 {
		verb = unpinVerb
	}
	command := strings.ToUpper(verb)
	op := o.newOp(w.channel, WriteOp, verb+" "+msgid)
	op.Result = answerOK
	err := o.commandThenPing(cl, command+" "+w.channel+" "+msgid, func(m ircmsg.Message) error {
		switch m.Command {
		case "NOTICE":
			if m.Param(0) == o.nick && strings.Contains(m.Param(1), msgid) {
				switch {
				case strings.Contains(m.Param(1), "is already pinned"):
					op.Result = answerAlreadyPinned
				case strings.Contains(m.Param(1), "is not pinned"):
					op.Result = answerNotPinned
				}
			}
		case "403", "442", "461", "482":
			return fmt.Errorf("%s %s: %w: %s", command, w.channel, errRefused, m.String())
		}
		return failOf(m, command)
	})
	return o.record(op, err)
}

func (w *pinWork) read(o *objectClient, cl *ircclient.Client) error {
	op := o.newOp(w.channel, ReadOp, "")
	value, err := readPins(cl, o.nick, w.channel)
	op.Result = value
	return o.record(op, err)
}

// readPins reads a channel's pin list with PINS after the fence, as msgids newest first joined
// by commas.
func readPins(cl *ircclient.Client, nick, channel string) (string, error) {
	if err := fence(cl, nil); err != nil {
		return "", err
	}
	if err := cl.Send("PINS " + channel); err != nil {
		return "", err
	}
	var pins []string
	err := await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "NOTICE":
			if m.Param(0) != nick {
				return false, nil
			}
			msgid, end, ok := parsePinsLine(channel, m.Param(1))
			if !ok {
				return false, nil
			}
			if !end {
				pins = append(pins, msgid)
			}
			return end, nil
		case "403", "442":
			return false, fmt.Errorf("PINS %s: %w: %s", channel, errRefused, m.String())
		}
		return false, nil
	})
	return strings.Join(pins, ","), err
}

// parsePinsLine reads one NOTICE of a PINS answer: "[#chan] <msgid> pinned by ..." (a pin) or
// "[#chan] N pinned message(s)" (the end). ok is false for any other text.
func parsePinsLine(channel, text string) (msgid string, end, ok bool) {
	rest, found := strings.CutPrefix(text, "["+channel+"] ")
	if !found {
		return "", false, false
	}
	if strings.HasSuffix(rest, " pinned message(s)") {
		return "", true, true
	}
	msgid, after, found := strings.Cut(rest, " ")
	if !found || msgid == "" || !strings.HasPrefix(after, "pinned by ") {
		return "", false, false
	}
	return msgid, false, true
}

// readREST reads the pin list from the node's REST API with ?consistency=strong (a read index
// taken from the leader), which is linearizable without a fence.
func (w *pinWork) readREST(o *objectClient) error {
	op := o.newOp(w.channel, ReadOp, "")
	value, err := w.restPins(o.cluster.addrs[o.node].HTTP)
	op.Result = value
	if err != nil {
		return nil // not answered: nothing learnt, and the connection is fine
	}
	return o.record(op, nil)
}

func (w *pinWork) restPins(httpAddr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	u := "http://" + httpAddr + "/api/v1/channels/" + url.PathEscape(w.channel) + "/pins?consistency=strong"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var body struct {
		Pins []struct {
			MsgID string `json:"msgid"`
		} `json:"pins"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	ids := make([]string, len(body.Pins))
	for i, p := range body.Pins {
		ids[i] = p.MsgID
	}
	return strings.Join(ids, ","), nil
}

func (w *pinWork) ended(*objectClient) {}
