package testcluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// setupObjects creates the mode and pin channels through a client on the first node. Each gets
// a topic so that it outlives its members. A mode channel's starting modes (+nt) are recorded as
// the first write of its history; a pin channel gets PinMessages messages, whose msgids the pin
// clients pin and unpin, and the setup waits until every node serves them.
func (r *runner) setupObjects(ctx context.Context) error {
	o := r.opts
	if o.ModeClientsPerNode <= 0 && o.PinClientsPerNode <= 0 {
		return nil
	}
	opCtx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cl, err := r.c.Guest(opCtx, 0, "setupobj", chatCaps...)
	if err != nil {
		return fmt.Errorf("testcluster: setup: %w", err)
	}
	defer r.c.Hangup(cl)
	var channels []string
	if o.ModeClientsPerNode > 0 {
		for i := range o.ModeChannels {
			channels = append(channels, modeChannel(i))
		}
	}
	if o.PinClientsPerNode > 0 {
		for i := range o.PinChannels {
			channels = append(channels, pinChannel(i))
		}
	}
	for _, ch := range channels {
		if err := joinChannel(opCtx, cl, ch, nil); err != nil {
			return fmt.Errorf("testcluster: setup: %w", err)
		}
		topic := "objects of " + ch
		if err := cl.Send("TOPIC " + ch + " :" + topic); err != nil {
			return err
		}
		if err := await(opCtx, cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
			return m.Command == "TOPIC" && m.Param(0) == ch && m.Param(1) == topic, failOf(m, "TOPIC")
		}); err != nil {
			return fmt.Errorf("testcluster: setup: TOPIC %s: %w", ch, err)
		}
	}
	if o.ModeClientsPerNode > 0 {
		for i := range o.ModeChannels {
			if err := r.setupModes(cl, modeChannel(i), i); err != nil {
				return err
			}
		}
	}
	if o.PinClientsPerNode > 0 {
		r.pinMsgIDs = make([][]string, o.PinChannels)
		for i := range o.PinChannels {
			if r.pinMsgIDs[i], err = r.setupPins(opCtx, cl, pinChannel(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

const startingModes = "+nt-mk"

func (r *runner) setupModes(cl *ircclient.Client, channel string, i int) error {
	op := ObjectOp{Client: r.clientID, Object: channel, Actor: "setupobj", Kind: WriteOp, Arg: startingModes, Result: answerOK,
		Node: r.c.addrs[0].Name, Call: r.rec.now()}
	err := sendThenPing(cl, "MODE "+channel+" "+startingModes, fmt.Sprintf("setup%d", i), func(m ircmsg.Message) error {
		switch m.Command {
		case "403", "442", "461", "472", "482", "696":
			return fmt.Errorf("%w: %s", errRefused, m.String())
		}
		return failOf(m, "MODE")
	})
	if err != nil {
		return fmt.Errorf("testcluster: setup: MODE %s %s: %w", channel, startingModes, err)
	}
	op.Return, op.Outcome = r.rec.now(), Done
	r.rec.objectOp(modeSpec.kind, op)
	return nil
}

// setupPins sends the messages of a pin channel and returns their msgids once every node serves
// them (PIN looks the message up in the node's own history).
func (r *runner) setupPins(ctx context.Context, cl *ircclient.Client, channel string) ([]string, error) {
	var msgids []string
	for k := range r.opts.PinMessages {
		text := fmt.Sprintf("pin me %s.%d", channel, k)
		if err := cl.Send("PRIVMSG " + channel + " :" + text); err != nil {
			return nil, err
		}
		if err := await(ctx, cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
			if m.Command == "PRIVMSG" && m.Param(0) == channel && m.Param(1) == text && m.Tags["msgid"] != "" {
				msgids = append(msgids, m.Tags["msgid"])
				return true, nil
			}
			return false, failOf(m, "PRIVMSG")
		}); err != nil {
			return nil, fmt.Errorf("testcluster: setup: message to %s: %w", channel, err)
		}
	}
	if err := r.waitStored(ctx, msgids); err != nil {
		return nil, fmt.Errorf("testcluster: setup: the messages of %s: %w", channel, err)
	}
	return msgids, nil
}

// waitStored waits until every node's REST API serves every message.
func (r *runner) waitStored(ctx context.Context, msgids []string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range r.c.N() {
		for _, id := range msgids {
			u := "http://" + r.c.addrs[i].HTTP + "/api/v1/messages/" + url.PathEscape(id)
			var last string
			err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
				resp, err := client.Get(u)
				if err != nil {
					last = err.Error()
					return false, nil
				}
				resp.Body.Close()
				last = resp.Status
				return resp.StatusCode == http.StatusOK, nil
			})
			if err != nil {
				return fmt.Errorf("%s does not serve %s (last: %s): %w", r.c.addrs[i].Name, id, last, err)
			}
		}
	}
	return nil
}

// startObjectClients starts the nick, mode and pin clients of every node. Each calls
// operating.Done once it stopped operating after traffic ended; nick clients keep their
// connection (and the nick it holds) until done ends, so the final reads see it.
func (r *runner) startObjectClients(traffic, done context.Context, operating, lingering *sync.WaitGroup) {
	o := r.opts
	var pool []string
	for i := range o.NickPool {
		pool = append(pool, poolNick(i))
	}
	httpClient := &http.Client{}
	for i := range r.c.N() {
		start := func(kind, name string, oper, linger bool, work objectWork) {
			r.clientID++
			c := &objectClient{rec: r.rec, cluster: r.c, kind: kind, id: r.clientID, name: name, node: i,
				rng: r.rng(), think: o.ObjectThink, oper: oper, linger: linger, work: work}
			operating.Add(1)
			lingering.Go(func() { c.run(traffic, done, operating.Done) })
		}
		for k := range max(o.NickClientsPerNode, 0) {
			start(nickSpec.kind, fmt.Sprintf("k%dn%d", k, i), false, true, &nickWork{pool: pool})
		}
		for k := range max(o.ModeClientsPerNode, 0) {
			ch := (i*o.ModeClientsPerNode + k) % o.ModeChannels
			start(modeSpec.kind, fmt.Sprintf("o%dn%d", k, i), true, false, &modeWork{channel: modeChannel(ch)})
		}
		for k := range max(o.PinClientsPerNode, 0) {
			ch := (i*o.PinClientsPerNode + k) % o.PinChannels
			start(pinSpec.kind, fmt.Sprintf("p%dn%d", k, i), true, false,
				&pinWork{channel: pinChannel(ch), msgids: r.pinMsgIDs[ch], http: httpClient})
		}
	}
}

// finalObjectReads reads every pool nick, mode channel and pin channel through cl (an operator
// on the node named node) once the cluster settled.
func (r *runner) finalObjectReads(cl *ircclient.Client, id int, node, nick string) {
	o := r.opts
	record := func(kind, object, value string, call time.Duration, err error) {
		if err != nil {
			r.rep.Problems = append(r.rep.Problems, fmt.Sprintf("final %s read of %s on %s: %v", kind, object, node, err))
			return
		}
		r.rec.objectOp(kind, ObjectOp{Client: id, Object: object, Actor: nick, Kind: ReadOp, Result: value,
			Call: call, Return: r.rec.now(), Outcome: Done, Node: node})
	}
	if o.NickClientsPerNode > 0 {
		for i := range o.NickPool {
			call := r.rec.now()
			value, err := readOwner(cl, poolNick(i))
			record(nickSpec.kind, poolNick(i), value, call, err)
		}
	}
	if o.ModeClientsPerNode > 0 {
		for i := range o.ModeChannels {
			call := r.rec.now()
			value, err := readModes(cl, modeChannel(i))
			record(modeSpec.kind, modeChannel(i), value, call, err)
		}
	}
	if o.PinClientsPerNode > 0 {
		for i := range o.PinChannels {
			call := r.rec.now()
			value, err := readPins(cl, nick, pinChannel(i))
			record(pinSpec.kind, pinChannel(i), value, call, err)
		}
	}
}
