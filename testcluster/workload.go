package testcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// chatChannel is where the chat clients talk.
const chatChannel = "#chat"

func topicChannel(i int) string { return fmt.Sprintf("#topic%d", i) }

// setup creates the channels through a client on the first node: each topic channel without +t
// (so every member may set its topic) and with a first topic, recorded as the history's first
// write; the chat channel with a topic too, so that it outlives its members across restarts.
func (r *runner) setup(ctx context.Context) error {
	opCtx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cl, err := r.c.Guest(opCtx, 0, "setup")
	if err != nil {
		return err
	}
	defer r.c.Hangup(cl)
	names := []string{chatChannel}
	for i := range r.opts.TopicChannels {
		names = append(names, topicChannel(i))
	}
	for _, ch := range names {
		if err := joinChannel(opCtx, cl, ch, nil); err != nil {
			return fmt.Errorf("testcluster: setup: %w", err)
		}
		if ch != chatChannel {
			if err := cl.Send("MODE " + ch + " -t"); err != nil {
				return err
			}
			if err := await(opCtx, cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
				return m.Command == "MODE" && m.Param(0) == ch, failOf(m, "MODE")
			}); err != nil {
				return fmt.Errorf("testcluster: setup: MODE %s -t: %w", ch, err)
			}
		}
		op := TopicOp{Client: r.clientID, Channel: ch, Kind: WriteOp, Value: "first topic of " + ch, Node: r.c.addrs[0].Name, Call: r.rec.now()}
		if err := cl.Send("TOPIC " + ch + " :" + op.Value); err != nil {
			return err
		}
		if err := await(opCtx, cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
			return m.Command == "TOPIC" && m.Param(0) == ch && m.Param(1) == op.Value, failOf(m, "TOPIC")
		}); err != nil {
			return fmt.Errorf("testcluster: setup: TOPIC %s: %w", ch, err)
		}
		op.Return, op.Outcome = r.rec.now(), Done
		if ch != chatChannel {
			r.rec.topicOp(op)
		}
	}
	return nil
}

// startClients starts the topic clients (until traffic ends) and the chat clients (sending until
// traffic ends, reading until done ends) on every node.
func (r *runner) startClients(traffic, done context.Context) (topics, chats *sync.WaitGroup) {
	topics, chats = &sync.WaitGroup{}, &sync.WaitGroup{}
	o := r.opts
	for i := range r.c.N() {
		for k := range o.TopicClientsPerNode {
			r.clientID++
			t := &topicClient{rec: r.rec, cluster: r.c, id: r.clientID, name: fmt.Sprintf("t%dn%d", k, i), node: i,
				channel: topicChannel((i*o.TopicClientsPerNode + k) % o.TopicChannels), rng: r.rng(), think: o.TopicThink}
			topics.Go(func() { t.run(traffic) })
		}
		for k := range o.ChatClientsPerNode {
			name := fmt.Sprintf("m%dn%d", k, i)
			ch := &chatClient{rec: r.rec, cluster: r.c, name: name, node: i, channel: chatChannel, rng: r.rng(),
				interval: o.MessageInterval, log: r.rec.newReceiver(name, r.c.addrs[i].Name)}
			chats.Go(func() { ch.run(traffic, done) })
		}
	}
	return topics, chats
}

// waitJoined waits until every chat client joined, so that every message of the traffic is owed
// to all of them.
func (r *runner) waitJoined(ctx context.Context) error {
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		_, logs := r.rec.deliveryHistory()
		for _, l := range logs {
			if !l.Joined {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("testcluster: waiting for the chat clients to join: %w", err)
	}
	return nil
}

// finalReads reads every topic, pool nick, mode set and pin list on every node once the cluster
// settled: reads after all writes ended, so an acknowledged write missing from a node's final
// state shows up as lost (topics) or as a history that is not linearizable (the others).
func (r *runner) finalReads(ctx context.Context) {
	for i := range r.c.N() {
		r.clientID++
		name := r.c.addrs[i].Name
		opCtx, cancel := context.WithTimeout(ctx, opTimeout)
		nick := fmt.Sprintf("final%d", i)
		cl, err := r.c.Guest(opCtx, i, nick)
		if err == nil {
			if err = becomeOper(opCtx, cl); err != nil {
				r.c.Hangup(cl)
			}
		}
		cancel()
		if err != nil {
			r.rep.Problems = append(r.rep.Problems, fmt.Sprintf("final reads on %s: %v", name, err))
			continue
		}
		for ch := range r.opts.TopicChannels {
			if _, err := fencedRead(cl, r.rec, r.clientID, name, topicChannel(ch), nil); err != nil {
				r.rep.Problems = append(r.rep.Problems, fmt.Sprintf("final read of %s on %s: %v", topicChannel(ch), name, err))
			}
		}
		r.finalObjectReads(cl, r.clientID, name, nick)
		r.c.Hangup(cl)
	}
}
