package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// chatCaps are what a chat client asks for: msgids on every line, its own messages echoed, and
// CHATHISTORY in batches.
var chatCaps = []string{"message-tags", "echo-message", "server-time", "batch", "draft/chathistory"}

// historyPage is the CHATHISTORY limit the chat clients ask for (the server's maximum).
const historyPage = 500

// chatClient is one logical member of the chat channel on one node: it sends numbered messages
// (one in flight at a time, each acknowledged by its echo) and records every message it reads.
// When its node goes away it reconnects after the restart, joins again and reads what it missed
// with CHATHISTORY AFTER the last msgid it read.
type chatClient struct {
	rec      *recorder
	cluster  *Cluster
	name     string
	node     int
	channel  string
	rng      *rand.Rand
	interval time.Duration // mean pause between messages
	log      *ReceiverLog

	conns, seq, queries int
	nick                string
	lastSeen            string    // msgid of the last message read (arrival order)
	firstJoinWall       time.Time // wall clock of the first JOIN, for a history query before any message
	pending             *SentMessage
	pendingSince        time.Time
	nextSend            time.Time
}

// run sends while sending lasts and reads until done ends.
func (c *chatClient) run(sending, done context.Context) {
	for done.Err() == nil {
		cl, err := c.connect(done)
		if err != nil {
			continue
		}
		err = c.work(sending, done, cl)
		c.pending = nil // an echo that never came: the message stays SendUnknown
		c.cluster.Hangup(cl)
		if err == nil {
			return
		}
	}
}

func (c *chatClient) connect(done context.Context) (*ircclient.Client, error) {
	if err := c.cluster.WaitUp(done, c.node); err != nil {
		return nil, err
	}
	c.conns++
	c.nick = fmt.Sprintf("%sc%d", c.name, c.conns)
	opCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cl, err := c.cluster.Guest(opCtx, c.node, c.nick, chatCaps...)
	if err == nil {
		err = joinChannel(opCtx, cl, c.channel, c.handle)
		if err == nil && !c.log.Joined {
			c.firstJoinWall = time.Now()
			c.rec.joined(c.log, c.rec.now())
		} else if err == nil {
			err = c.catchUp(cl)
		}
		if err != nil {
			c.cluster.Hangup(cl)
		}
	}
	if err != nil {
		pause(done, 100*time.Millisecond)
		return nil, err
	}
	return cl, nil
}

// catchUp reads, page by page, what was stored after the last message this client read.
func (c *chatClient) catchUp(cl *ircclient.Client) error {
	for {
		ref := "msgid=" + c.lastSeen
		if c.lastSeen == "" {
			ref = "timestamp=" + c.firstJoinWall.Add(-time.Second).UTC().Format(time.RFC3339Nano)
		}
		c.queries++
		query := c.queries
		at := c.rec.now()
		if err := cl.Send(fmt.Sprintf("CHATHISTORY AFTER %s %s %d", c.channel, ref, historyPage)); err != nil {
			return err
		}
		batch, count := "", 0
		err := await(context.Background(), cl, opTimeout, nil, func(m ircmsg.Message) (bool, error) {
			switch {
			case m.Command == "BATCH" && len(m.Params) >= 2 && strings.HasPrefix(m.Params[0], "+") && m.Params[1] == "chathistory":
				batch = m.Params[0][1:]
			case m.Command == "BATCH" && batch != "" && m.Param(0) == "-"+batch:
				return true, nil
			case batch != "" && m.Tags["batch"] == batch:
				if m.Command == "PRIVMSG" {
					count++
					c.read(m, query)
				}
			default:
				c.handle(m)
			}
			return false, failOf(m, "CHATHISTORY")
		})
		c.rec.query(c.log, HistoryQuery{N: query, Conn: c.conns, After: ref, At: at, Count: count})
		if err != nil || count < historyPage {
			return err
		}
	}
}

// work sends and reads on one connection. It returns nil when done ends, an error when the
// connection fails.
func (c *chatClient) work(sending, done context.Context, cl *ircclient.Client) error {
	for {
		if done.Err() != nil {
			return nil
		}
		now := time.Now()
		if c.pending == nil && sending.Err() == nil && !now.Before(c.nextSend) {
			if err := c.send(cl); err != nil {
				return err
			}
		}
		wait := 100 * time.Millisecond
		if c.pending != nil {
			if now.Sub(c.pendingSince) > opTimeout {
				return fmt.Errorf("%s: no echo for %q", c.nick, c.pending.Text)
			}
		} else if sending.Err() == nil {
			wait = min(wait, max(time.Until(c.nextSend), time.Millisecond))
		}
		ctx, cancel := context.WithTimeout(done, wait)
		m, err := cl.ReadMessage(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			continue // nothing arrived in time (no line is lost), or done ended: checked above
		case errors.Is(err, ircclient.ErrLineTooLong), errors.Is(err, ircmsg.ErrMalformed):
			continue
		case err != nil:
			return err
		}
		if m.Command == "PING" {
			if err := cl.Send(ircmsg.Message{Command: "PONG", Params: m.Params}.String()); err != nil {
				return err
			}
			continue
		}
		c.handle(m)
	}
}

func (c *chatClient) send(cl *ircclient.Client) error {
	c.seq++
	text := fmt.Sprintf("%s.%d", c.name, c.seq)
	c.pending = c.rec.newSent(SentMessage{Sender: c.name, Node: c.cluster.addrs[c.node].Name, Text: text, Call: c.rec.now()})
	c.pendingSince = time.Now()
	return cl.Send("PRIVMSG " + c.channel + " :" + text)
}

// handle deals with a line outside a history batch: its own echo, someone's message, a refusal.
func (c *chatClient) handle(m ircmsg.Message) {
	switch m.Command {
	case "PRIVMSG":
		if m.Param(0) != c.channel {
			return
		}
		if nickOf(m.Source) == c.nick && c.pending != nil && m.Param(1) == c.pending.Text {
			c.rec.settle(c.pending, Acked, m.Tags["msgid"])
			c.lastSeen = m.Tags["msgid"]
			c.settled()
			return
		}
		c.read(m, 0)
	case "404", "403", "442":
		if c.pending != nil && m.Param(1) == c.channel {
			c.rec.settle(c.pending, Refused, "")
			c.settled()
		}
	case "FAIL":
		if c.pending != nil && m.Param(0) == "PRIVMSG" {
			c.rec.settle(c.pending, Refused, "")
			c.settled()
		}
	}
}

func (c *chatClient) settled() {
	c.pending = nil
	half := int64(c.interval / 2)
	c.nextSend = time.Now().Add(time.Duration(half + c.rng.Int64N(2*half+1)))
}

// read records a message read live (query 0) or from a history query.
func (c *chatClient) read(m ircmsg.Message, query int) {
	msgid := m.Tags["msgid"]
	c.rec.receipt(c.log, Receipt{Text: m.Param(1), MsgID: msgid, Conn: c.conns, History: query})
	if msgid != "" {
		c.lastSeen = msgid
	}
}
