package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// The server operator the mode and pin clients log in as (OPER): an operator may change any
// channel's modes and pins without being a member, and keeps that right across reconnections,
// where a guest's channel-op status would end with its session.
const (
	operName     = "testcluster"
	operPassword = "testcluster-oper"
)

// errOutcomeUnknown ends a connection after a nick change whose outcome is unknown: the session
// may hold a nick its client does not know about, so it is given up (its end releases the nick).
var errOutcomeUnknown = errors.New("outcome unknown")

// objectWork is the operations of one kind of object client.
type objectWork interface {
	// step runs one operation on cl. An error other than errRefused or errUnavailable ends the
	// connection.
	step(o *objectClient, cl *ircclient.Client) error
	// ended is called once a connection ended.
	ended(o *objectClient)
}

// objectClient drives one IRC connection at a time on one node for the nick, mode or pin
// workload, reconnecting as a new session when its node goes away. Its nick (a fresh one per
// connection) is also its USER name, which WHOIS shows: the connection's identity.
type objectClient struct {
	rec     *recorder
	cluster *Cluster
	kind    string // "nick", "mode", "pin"
	id      int    // porcupine client id
	name    string
	node    int
	rng     *rand.Rand
	think   time.Duration
	oper    bool // log in as a server operator after registering
	linger  bool // keep the last connection open until done ends
	work    objectWork

	conns, tokens int
	nick          string
}

func (o *objectClient) nodeName() string { return o.cluster.addrs[o.node].Name }

// run works until traffic ends, then calls stopped; a lingering client keeps its connection
// until done ends.
func (o *objectClient) run(traffic, done context.Context, stopped func()) {
	defer func() {
		if stopped != nil {
			stopped()
		}
	}()
	for traffic.Err() == nil {
		cl, err := o.connect(traffic)
		if err != nil {
			continue // connect waited for the node or a backoff
		}
		if o.loop(traffic, cl) && o.linger {
			stopped()
			stopped = nil
			<-done.Done()
		}
		o.cluster.Hangup(cl)
		o.work.ended(o)
	}
}

// loop runs operations until traffic ends (true) or the connection fails (false).
func (o *objectClient) loop(traffic context.Context, cl *ircclient.Client) bool {
	for {
		if o.think > 0 {
			pause(traffic, time.Duration(o.rng.Int64N(int64(o.think))))
		}
		if traffic.Err() != nil {
			return true
		}
		err := o.work.step(o, cl)
		if err != nil && !errors.Is(err, errRefused) && !errors.Is(err, errUnavailable) {
			return false
		}
	}
}

func (o *objectClient) connect(ctx context.Context) (*ircclient.Client, error) {
	if err := o.cluster.WaitUp(ctx, o.node); err != nil {
		return nil, err
	}
	o.conns++
	o.nick = fmt.Sprintf("%sc%d", o.name, o.conns)
	opCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cl, err := o.cluster.Guest(opCtx, o.node, o.nick)
	if err == nil && o.oper {
		if err = becomeOper(opCtx, cl); err != nil {
			o.cluster.Hangup(cl)
		}
	}
	if err != nil {
		pause(ctx, 100*time.Millisecond)
		return nil, err
	}
	return cl, nil
}

// becomeOper logs cl in as the harness's server operator.
func becomeOper(ctx context.Context, cl *ircclient.Client) error {
	if err := cl.Send("OPER " + operName + " " + operPassword); err != nil {
		return err
	}
	return await(ctx, cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "381":
			return true, nil
		case "464", "491":
			return false, fmt.Errorf("OPER: %w: %s", errRefused, m.String())
		}
		return false, failOf(m, "OPER")
	})
}

// fence sends AWAY, a write of the client's own that goes through Raft and is answered once this
// node applied it: a local read after it reflects every entry committed before the fence began.
func fence(cl *ircclient.Client, observe func(ircmsg.Message)) error {
	if err := cl.Send("AWAY"); err != nil {
		return err
	}
	return await(context.Background(), cl, opTimeout, observe, func(m ircmsg.Message) (bool, error) {
		if m.Command == "305" {
			return true, nil
		}
		return false, failOf(m, "AWAY")
	})
}

// commandThenPing sends line and a PING with a fresh token (see sendThenPing).
func (o *objectClient) commandThenPing(cl *ircclient.Client, line string, handle func(ircmsg.Message) error) error {
	o.tokens++
	return sendThenPing(cl, line, "tc"+strconv.Itoa(o.tokens), handle)
}

// sendThenPing sends line and a PING carrying token, and passes every reply to handle until the
// PONG: the server handles one connection's commands in order, and a command that proposes
// something answers only once its node applied it, so the PONG means the command is done even
// when it answers nothing (a MODE or PIN whose only echo goes to channel members). token must be
// new on the connection.
func sendThenPing(cl *ircclient.Client, line, token string, handle func(ircmsg.Message) error) error {
	if err := cl.Send(line); err != nil {
		return err
	}
	if err := cl.Send("PING :" + token); err != nil {
		return err
	}
	return await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		if m.Command == "PONG" && m.Param(len(m.Params)-1) == token {
			return true, nil
		}
		return false, handle(m)
	})
}

// record stores op with its outcome: Done when err is nil, nothing for a refusal, Unknown
// otherwise. It returns err.
func (o *objectClient) record(op ObjectOp, err error) error {
	switch {
	case err == nil:
		op.Return, op.Outcome = o.rec.now(), Done
	case errors.Is(err, errRefused):
		return err
	case op.Kind == ReadOp:
		return err // a read that did not answer tells nothing
	default:
		op.Outcome = Unknown
	}
	o.rec.objectOp(o.kind, op)
	return err
}

func (o *objectClient) newOp(object string, kind OpKind, arg string) ObjectOp {
	return ObjectOp{Client: o.id, Object: object, Actor: o.nick, Kind: kind, Arg: arg, Node: o.nodeName(), Call: o.rec.now()}
}
