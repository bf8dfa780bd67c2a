package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// opTimeout bounds one client operation; longer than the server's own proposal timeout (15 s),
// so a slow answer is not mistaken for a lost connection.
const opTimeout = 25 * time.Second

// topicClient drives one IRC client on one node: it alternates TOPIC writes and fenced TOPIC
// reads on one channel and records each operation. It reconnects (as a new session) when its
// node goes away.
type topicClient struct {
	rec     *recorder
	cluster *Cluster
	id      int // porcupine client id
	name    string
	node    int
	channel string
	rng     *rand.Rand
	think   time.Duration // longest pause between operations

	conns, seq int
	nick       string
}

// observe records every topic value the client sees: TOPIC lines (anyone's change, applied on
// this node) and 332 replies (this node's replica). Either proves the value was committed by then,
// which resolves writes whose outcome their own client never learnt.
func (t *topicClient) observe(m ircmsg.Message) {
	switch {
	case m.Command == "TOPIC" && len(m.Params) >= 2:
		t.rec.echo(m.Params[0], m.Params[1], t.rec.now())
	case m.Command == "332" && len(m.Params) >= 3:
		t.rec.echo(m.Params[1], m.Params[2], t.rec.now())
	}
}

// run works until ctx ends. The operation in flight when ctx ends is finished first.
func (t *topicClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		cl, err := t.connect(ctx)
		if err != nil {
			continue // connect waited for the node or a backoff
		}
		t.work(ctx, cl)
		t.cluster.Hangup(cl)
	}
}

// connect waits for the node, registers a fresh nick and joins the channel.
func (t *topicClient) connect(ctx context.Context) (*ircclient.Client, error) {
	if err := t.cluster.WaitUp(ctx, t.node); err != nil {
		return nil, err
	}
	t.conns++
	t.nick = fmt.Sprintf("%sc%d", t.name, t.conns)
	opCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cl, err := t.cluster.Guest(opCtx, t.node, t.nick)
	if err == nil {
		if err = joinChannel(opCtx, cl, t.channel, t.observe); err != nil {
			t.cluster.Hangup(cl)
		}
	}
	if err != nil {
		pause(ctx, 100*time.Millisecond)
		return nil, err
	}
	return cl, nil
}

// work runs operations on one connection until ctx ends or the connection fails.
func (t *topicClient) work(ctx context.Context, cl *ircclient.Client) {
	for {
		if t.think > 0 {
			pause(ctx, time.Duration(t.rng.Int64N(int64(t.think))))
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		if t.rng.IntN(2) == 0 {
			err = t.write(cl)
		} else {
			_, err = fencedRead(cl, t.rec, t.id, t.cluster.addrs[t.node].Name, t.channel, t.observe)
		}
		if err != nil && !errors.Is(err, errRefused) && !errors.Is(err, errUnavailable) {
			return // the connection is gone or stuck
		}
	}
}

// write sets a new unique topic and waits for its own echo: the acknowledgement.
func (t *topicClient) write(cl *ircclient.Client) error {
	t.seq++
	op := TopicOp{Client: t.id, Channel: t.channel, Kind: WriteOp, Value: fmt.Sprintf("%s.%d", t.name, t.seq), Node: t.cluster.addrs[t.node].Name}
	op.Call = t.rec.now()
	err := cl.Send("TOPIC " + t.channel + " :" + op.Value)
	if err == nil {
		err = await(context.Background(), cl, opTimeout, t.observe, func(m ircmsg.Message) (bool, error) {
			switch m.Command {
			case "TOPIC":
				return nickOf(m.Source) == t.nick && m.Param(0) == t.channel && m.Param(1) == op.Value, nil
			case "403", "442", "482":
				return false, fmt.Errorf("topic: %w: %s", errRefused, m.String())
			}
			return false, failOf(m, "TOPIC")
		})
	}
	switch {
	case err == nil:
		op.Return, op.Outcome = t.rec.now(), Done
	case errors.Is(err, errRefused):
		return err // nothing was proposed: not part of the history
	default:
		op.Outcome = Unknown
	}
	t.rec.topicOp(op)
	return err
}

// fencedRead reads a channel's topic with TOPIC after a write of its own (AWAY, which goes
// through Raft and is answered once this node applied it). TOPIC alone reads the node's local
// replica, which may lag the leader; after the fence it reflects at least every entry committed
// before the read began, so the read is linearizable and can join the history. It records the
// read and returns its value. A read whose fence or answer fails is not recorded.
func fencedRead(cl *ircclient.Client, rec *recorder, client int, node, channel string, observe func(ircmsg.Message)) (string, error) {
	op := TopicOp{Client: client, Channel: channel, Kind: ReadOp, Node: node}
	op.Call = rec.now()
	if err := fence(cl, observe); err != nil {
		return "", err
	}
	if err := cl.Send("TOPIC " + channel); err != nil {
		return "", err
	}
	err := await(context.Background(), cl, opTimeout, observe, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "332":
			if m.Param(1) == channel {
				op.Value = m.Param(2)
				return true, nil
			}
		case "331":
			if m.Param(1) == channel {
				return true, nil
			}
		case "403", "442":
			return false, fmt.Errorf("topic read: %w: %s", errRefused, m.String())
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	op.Return, op.Outcome = rec.now(), Done
	rec.topicOp(op)
	return op.Value, nil
}

// pause waits d or until ctx ends. It paces the workload; it synchronizes nothing.
func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}
