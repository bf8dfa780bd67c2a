package testcluster

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func modeChannel(i int) string { return fmt.Sprintf("#mode%d", i) }

// modeWork toggles simple modes of one channel (+m/-m, +n/-n, +t/-t, +k key/-k, each key unique)
// as a server operator, and reads them with a MODE query after the AWAY fence. A write is
// acknowledged by the PONG that follows it (see commandThenPing); a change already in effect
// answers nothing and changes nothing, which the model allows.
type modeWork struct {
	channel string
	seq     int
}

var modeToggles = []string{"+m", "-m", "+n", "-n", "+t", "-t", "+k", "-k"}

func (w *modeWork) step(o *objectClient, cl *ircclient.Client) error {
	if o.rng.IntN(2) == 0 {
		return w.read(o, cl)
	}
	change := modeToggles[o.rng.IntN(len(modeToggles))]
	if change == "+k" {
		w.seq++
		change = fmt.Sprintf("+k %s.%d", o.name, w.seq)
	}
	op := o.newOp(w.channel, WriteOp, change)
	err := o.commandThenPing(cl, "MODE "+w.channel+" "+change, func(m ircmsg.Message) error {
		switch m.Command {
		case "403", "442", "461", "472", "482", "696":
			return fmt.Errorf("MODE %s %s: %w: %s", w.channel, change, errRefused, m.String())
		}
		return failOf(m, "MODE")
	})
	op.Result = answerOK
	return o.record(op, err)
}

func (w *modeWork) read(o *objectClient, cl *ircclient.Client) error {
	op := o.newOp(w.channel, ReadOp, "")
	value, err := readModes(cl, w.channel)
	op.Result = value
	return o.record(op, err)
}

// readModes reads a channel's modes (and key, shown to members and operators) after the fence.
func readModes(cl *ircclient.Client, channel string) (string, error) {
	if err := fence(cl, nil); err != nil {
		return "", err
	}
	if err := cl.Send("MODE " + channel); err != nil {
		return "", err
	}
	var value string
	err := await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "324":
			if m.Param(1) == channel {
				value = parseModeReply(m.Param(2), m.Param(3))
				return true, nil
			}
		case "403":
			return false, fmt.Errorf("MODE %s: %w: %s", channel, errRefused, m.String())
		}
		return false, nil
	})
	return value, err
}

func (w *modeWork) ended(*objectClient) {}
