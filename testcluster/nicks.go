package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func poolNick(i int) string { return fmt.Sprintf("pool%d", i) }

// nickWork claims and releases nicks of a small shared pool and reads who holds them. A
// connection holds at most one pool nick: it claims one with NICK from its own nick (answered by
// its NICK echo, or 433 when someone holds it) and releases it with NICK back to its own nick,
// so every write touches one nick. A read is WHOIS after the AWAY fence; the owner is the USER
// name it shows. A nick change whose outcome is unknown ends the connection; the end of a
// session releases whatever it held, at an unknown time after its last answered operation.
type nickWork struct {
	pool    []string
	holding string   // the pool nick this connection holds
	maybe   []string // pool nicks claimed with an unknown outcome on this connection
	// since is the call time of the last answered operation: the server handled it with the
	// session alive, so the session's end (which releases its nick) came after since.
	since time.Duration
}

func (n *nickWork) step(o *objectClient, cl *ircclient.Client) error {
	target := n.pool[o.rng.IntN(len(n.pool))]
	switch {
	case n.holding != "" && o.rng.IntN(2) == 0:
		return n.release(o, cl)
	case n.holding == "" && o.rng.IntN(2) == 0:
		return n.claim(o, cl, target)
	default:
		return n.read(o, cl, target)
	}
}

func (n *nickWork) claim(o *objectClient, cl *ircclient.Client, target string) error {
	op := o.newOp(target, WriteOp, nickClaim)
	err := n.change(o, cl, o.nick, target, func(inUse bool) {
		op.Result = answerOK
		if inUse {
			op.Result = answerInUse
		}
	})
	err = o.record(op, err)
	switch {
	case err == nil:
		n.since = op.Call
		if op.Result == answerOK {
			n.holding = target
		}
		return nil
	case errors.Is(err, errRefused):
		return err
	}
	n.maybe = append(n.maybe, target)
	return fmt.Errorf("nick claim of %s: %w (%v)", target, errOutcomeUnknown, err)
}

func (n *nickWork) release(o *objectClient, cl *ircclient.Client) error {
	op := o.newOp(n.holding, WriteOp, nickRelease)
	err := n.change(o, cl, n.holding, o.nick, func(inUse bool) {
		op.Result = answerOK
		if inUse { // its own nick, which only it ever uses: nothing changed
			op.Result = answerInUse
		}
	})
	if err == nil && op.Result == answerInUse {
		err = fmt.Errorf("nick release: %w: 433 for its own nick %s", errRefused, o.nick)
	}
	err = o.record(op, err)
	switch {
	case err == nil:
		n.since, n.holding = op.Call, ""
		return nil
	case errors.Is(err, errRefused):
		return err
	}
	return fmt.Errorf("nick release of %s: %w (%v)", op.Object, errOutcomeUnknown, err)
}

// change sends NICK to and waits for its echo from the nick from (answered(false)) or for 433
// (answered(true)).
func (n *nickWork) change(o *objectClient, cl *ircclient.Client, from, to string, answered func(inUse bool)) error {
	if err := cl.Send("NICK " + to); err != nil {
		return err
	}
	return await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "NICK":
			if strings.EqualFold(nickOf(m.Source), from) && strings.EqualFold(m.Param(0), to) {
				answered(false)
				return true, nil
			}
		case "433":
			if strings.EqualFold(m.Param(1), to) {
				answered(true)
				return true, nil
			}
		case "431", "432":
			return false, fmt.Errorf("NICK %s: %w: %s", to, errRefused, m.String())
		}
		return false, failOf(m, "NICK")
	})
}

// read asks who holds a pool nick.
func (n *nickWork) read(o *objectClient, cl *ircclient.Client, target string) error {
	op := o.newOp(target, ReadOp, "")
	value, err := readOwner(cl, target)
	op.Result = value
	err = o.record(op, err)
	if err == nil {
		n.since = op.Call
	}
	return err
}

// readOwner asks WHOIS after the fence: the owner's USER name, "" for a free nick.
func readOwner(cl *ircclient.Client, nick string) (string, error) {
	if err := fence(cl, nil); err != nil {
		return "", err
	}
	if err := cl.Send("WHOIS " + nick); err != nil {
		return "", err
	}
	var owner string
	err := await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "311":
			if strings.EqualFold(m.Param(1), nick) {
				owner = m.Param(2)
			}
		case "318":
			return strings.EqualFold(m.Param(1), nick), nil
		}
		return false, nil
	})
	return owner, err
}

// ended records the release of every pool nick the ended session held or may have held: its
// end frees them, at some time after it was last seen alive.
func (n *nickWork) ended(o *objectClient) {
	held := n.maybe
	if n.holding != "" {
		held = append(held, n.holding)
	}
	for _, nick := range held {
		o.rec.objectOp(o.kind, ObjectOp{Client: o.id, Object: nick, Actor: o.nick, Kind: WriteOp, Arg: nickRelease,
			Call: n.since, Outcome: Unknown, Node: o.nodeName()})
	}
	n.holding, n.maybe, n.since = "", nil, o.rec.now()
}
