package irc

// batchFanOut sends the messages a connection's pipeline committed together (completeQueued) to
// the members of their channel. A run of messages to one channel of more than inlineFanOut local
// members is sent with one walk of the members and one append to each member's queue, instead of
// one of each per message: a sender that writes faster than its commits (B3: one sender, 1,000
// members) has ~10 messages a batch at 800 msg/s, and the per-message walk and appends were most
// of its pipeline's time. The lines of each capability variant are rendered once. It is used by
// the pipeline's goroutine only.
type batchFanOut struct {
	sender   *client
	channel  string
	msgs     []*outMsg // the run gathered so far, to channel, in order
	variants []fanOutLines
}

// fanOutLines is a run's lines as the members of one rendering variant (variantOf) receive them.
type fanOutLines struct {
	variant int
	lines   [][]byte
}

// add gathers a message to channel, sending the run gathered before it first if that run was to
// another channel.
func (b *batchFanOut) add(channel string, o *outMsg) {
	if len(b.msgs) > 0 && b.channel != channel {
		b.flush()
	}
	b.channel = channel
	b.msgs = append(b.msgs, o)
}

// flush sends the gathered run to the channel's members, read now (after the store), and empties
// it. A run of one message, or to a channel of a few members, goes as single messages do
// (deliverToMembers), so that the sender's goroutine still writes to a few idle members itself.
func (b *batchFanOut) flush() {
	if len(b.msgs) == 0 {
		return
	}
	msgs := b.msgs
	defer func() {
		clear(b.msgs)
		b.msgs = b.msgs[:0]
		clear(b.variants) // the queues copied the lines they took
		b.variants = b.variants[:0]
	}()
	members := b.sender.s.localMembers(b.channel) // shared: read only
	if len(msgs) == 1 || len(members) <= inlineFanOut {
		for _, o := range msgs {
			b.sender.deliverToMembers(members, o)
		}
		return
	}
	for _, rc := range members {
		if rc == b.sender {
			continue
		}
		if lines := b.linesFor(rc.capBits()); len(lines) > 0 {
			rc.deliverLines(lines)
		}
	}
}

// linesFor returns the run's lines for a member with caps, rendered once per variant (variantOf,
// which includes message-tags): a member without message-tags gets no TAGMSG. The slice is
// shared by the members of the variant.
func (b *batchFanOut) linesFor(caps capBits) [][]byte {
	v := variantOf(caps)
	for _, fl := range b.variants {
		if fl.variant == v {
			return fl.lines
		}
	}
	var lines [][]byte
	for _, o := range b.msgs {
		if o.msg.Command == "TAGMSG" && caps&capMessageTags == 0 {
			continue
		}
		lines = append(lines, o.bytesFor(caps))
	}
	b.variants = append(b.variants, fanOutLines{variant: v, lines: lines})
	return lines
}

// deliverToMembers delivers one message to a channel's members but the sender (c): the message's
// own fan-out, inline for a few members. A member without message-tags gets no TAGMSG.
func (c *client) deliverToMembers(members []*client, o *outMsg) {
	tagmsg := o.msg.Command == "TAGMSG"
	inline := len(members) <= inlineFanOut
	for _, rc := range members {
		if rc == c || tagmsg && !rc.has(capMessageTags) {
			continue
		}
		rc.deliverLive(o, false, inline)
	}
}
