package exchange

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// The stream's frames carry batches of events in a compact binary form instead of JSON: a
// receiver at 10,000 messages/s spent a seventh of its CPU decoding JSON batches. The form is
// written with encoding/binary (varints and length-prefixed strings) rather than a schema
// library because an Event is a flat record of strings, integers and one string map, so the
// encoder and decoder stay short enough to read in full, and the decoder is fuzzed
// (FuzzDecodeBatch): every length is checked against what remains before anything is allocated,
// and every input either decodes into events that re-encode to the same bytes or fails with an
// error.
//
// A batch is: version (1 byte, 2), then three sections, one per durable log of the origin: its
// messages and edits, its deletes, its reactions. Each section is after (uvarint: the log seq it
// follows), last (uvarint: the log seq it runs through), the number of records (uvarint), then the
// records. An event is origin_seq (uvarint), msgid, venue, command, sender, sender_nick,
// sender_did, text (strings), tags, time_ms (varint), replaces_msgid, incarnation (strings),
// public (1 byte, 0 or 1), status (string). A deletion is origin_seq (uvarint), root_msgid,
// venue, sender, sender_did (strings), at_ms (varint), tags. A reaction is origin_seq (uvarint),
// event_msgid, root_msgid, reactor, reactor_nick, emoji, venue, sender, sender_did (strings),
// remove (1 byte, 0 or 1), at_ms (varint), tags. Tags are their number (uvarint) and each key and
// value (strings, keys in ascending order). A string is its length in bytes (uvarint) and its
// bytes. Version 1 (messages only) is no longer spoken: a node of an earlier version streams to
// no one newer, and its rows reach them by the pull.

const frameVersion = 2

// Bounds a decoder enforces before allocating.
const (
	maxFrameEvents = limits.FrameItems
	maxFrameTags   = limits.Tags
)

// span is the range of one log a section covers: after < seq <= last.
type span struct{ After, Last int64 }

// streamBatch is one frame's content: for each of the origin's logs, the records it stored with
// after < seq <= last. Between nodes of a cluster a section holds all of them: the receiver may
// move its cursor for that log to last once it applied them, if it had everything through after.
// To a configured server a section holds those due to it (the others were passed over).
type streamBatch struct {
	After, Last int64 // the messages section
	Events      []Event
	Dels        span
	Deletions   []eventstore.Deletion // Origin is the receiver's to set
	Reacts      span
	Reactions   []eventstore.ReactionEvent // Origin is the receiver's to set
}

// appendBatch appends b's binary form to dst.
func appendBatch(dst []byte, b streamBatch) []byte {
	dst = appendBatchHead(dst, b.After, b.Last, len(b.Events))
	for i := range b.Events {
		dst = appendEvent(dst, &b.Events[i])
	}
	return appendLogs(dst, b)
}

// appendLogs appends the deletions and reactions sections of b, which follow the events.
func appendLogs(dst []byte, b streamBatch) []byte {
	dst = binary.AppendUvarint(dst, uint64(b.Dels.After))
	dst = binary.AppendUvarint(dst, uint64(b.Dels.Last))
	dst = binary.AppendUvarint(dst, uint64(len(b.Deletions)))
	for i := range b.Deletions {
		d := &b.Deletions[i]
		dst = binary.AppendUvarint(dst, uint64(d.Seq))
		for _, s := range [...]string{d.RootMsgID, d.Venue, d.Sender, d.SenderDID} {
			dst = appendString(dst, s)
		}
		dst = binary.AppendVarint(dst, d.At.UnixMilli())
		dst = appendTags(dst, d.Tags)
	}
	dst = binary.AppendUvarint(dst, uint64(b.Reacts.After))
	dst = binary.AppendUvarint(dst, uint64(b.Reacts.Last))
	dst = binary.AppendUvarint(dst, uint64(len(b.Reactions)))
	for i := range b.Reactions {
		r := &b.Reactions[i]
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		for _, s := range [...]string{r.EventID, r.Root, r.Reactor, r.ReactorNick, r.Emoji, r.Venue, r.Sender, r.SenderDID} {
			dst = appendString(dst, s)
		}
		dst = appendBool(dst, r.Remove)
		dst = binary.AppendVarint(dst, r.At.UnixMilli())
		dst = appendTags(dst, r.Tags)
	}
	return dst
}

// appendBatchHead appends what precedes a batch's n events: a batch is its head followed by the
// events' forms (appendEvent) and the other logs (appendLogs), so an event encoded once can go
// into the frames of every peer.
func appendBatchHead(dst []byte, after, last int64, n int) []byte {
	dst = append(dst, frameVersion)
	dst = binary.AppendUvarint(dst, uint64(after))
	dst = binary.AppendUvarint(dst, uint64(last))
	return binary.AppendUvarint(dst, uint64(n))
}

// appendEvent appends one event's binary form to dst.
func appendEvent(dst []byte, e *Event) []byte {
	dst = binary.AppendUvarint(dst, uint64(e.OriginSeq))
	for _, s := range [...]string{e.MsgID, e.Venue, e.Command, e.Sender, e.SenderNick, e.SenderDID, e.Text} {
		dst = appendString(dst, s)
	}
	dst = appendTags(dst, e.Tags)
	dst = binary.AppendVarint(dst, e.TimeMS)
	dst = appendString(dst, e.ReplacesMsgID)
	dst = appendString(dst, e.Incarnation)
	dst = appendBool(dst, e.Public)
	return appendString(dst, e.Status)
}

func appendTags(dst []byte, tags map[string]string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(tags)))
	switch len(tags) {
	case 0:
	case 1:
		for k, v := range tags {
			dst = appendString(dst, k)
			dst = appendString(dst, v)
		}
	default:
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			dst = appendString(dst, k)
			dst = appendString(dst, tags[k])
		}
	}
	return dst
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads a batch, remembering the first error.
type decoder struct {
	buf     []byte
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("batch: bad %s", what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 || n != len(binary.AppendUvarint(d.scratch[:0], v)) { // one form per value
		d.fail(what)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) int64(what string) int64 {
	v := d.uvarint(what)
	if v > math.MaxInt64 {
		d.fail(what)
		return 0
	}
	return int64(v)
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 || n != len(binary.AppendVarint(d.scratch[:0], v)) {
		d.fail(what)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)) {
		d.fail(what)
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) == 0 {
		d.fail(what)
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) bool(what string) bool {
	switch d.byte(what) {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail(what)
	return false
}

// tags reads a tag set (nil when empty), keys in ascending order.
func (d *decoder) tags() map[string]string {
	n := d.uvarint("tag count")
	if d.err == nil && (n > maxFrameTags || n > uint64(len(d.buf))) {
		d.fail("tag count")
	}
	if d.err != nil || n == 0 {
		return nil
	}
	tags := make(map[string]string, n)
	prev := ""
	for i := range n {
		k, v := d.string("tag key"), d.string("tag value")
		if d.err == nil && i > 0 && k <= prev {
			d.fail("tag order")
		}
		prev = k
		tags[k] = v
	}
	return tags
}

// section reads a section's range and record count, checked before anything is allocated.
func (d *decoder) section(what string) (span, uint64) {
	s := span{After: d.int64(what + " after"), Last: d.int64(what + " last")}
	n := d.uvarint(what + " count")
	if d.err == nil && (n > maxFrameEvents || n > uint64(len(d.buf))) {
		d.fail(what + " count")
	}
	if d.err == nil && s.Last < s.After {
		d.fail(what + " range")
	}
	return s, n
}

// inSpan checks that a record's seq lies in its section's range.
func (d *decoder) inSpan(s span, seq int64, what string) {
	if d.err == nil && (seq <= s.After || seq > s.Last) {
		d.err = fmt.Errorf("batch: %s outside its section's range", what)
	}
}

// decodeBatch parses a batch's binary form. It checks the form only (counts, lengths, key order,
// ranges); what a receiver relies on in each record is Event.validate's and the appliers'.
func decodeBatch(buf []byte) (streamBatch, error) {
	d := &decoder{buf: buf}
	if v := d.byte("version"); d.err == nil && v != frameVersion {
		return streamBatch{}, fmt.Errorf("batch: version %d, want %d", v, frameVersion)
	}
	msgs, n := d.section("messages")
	if d.err != nil {
		return streamBatch{}, d.err
	}
	b := streamBatch{After: msgs.After, Last: msgs.Last, Events: make([]Event, 0, n)}
	for range n {
		var e Event
		e.OriginSeq = d.int64("origin seq")
		e.MsgID, e.Venue, e.Command = d.string("msgid"), d.string("venue"), d.string("command")
		e.Sender, e.SenderNick, e.SenderDID = d.string("sender"), d.string("sender nick"), d.string("sender did")
		e.Text = d.string("text")
		e.Tags = d.tags()
		e.TimeMS = d.varint("time")
		e.ReplacesMsgID, e.Incarnation = d.string("replaces msgid"), d.string("incarnation")
		e.Public = d.bool("public")
		e.Status = d.string("status")
		d.inSpan(msgs, e.OriginSeq, "an event")
		if d.err != nil {
			return streamBatch{}, d.err
		}
		b.Events = append(b.Events, e)
	}
	b.Dels, n = d.section("deletions")
	if d.err == nil && n > 0 {
		b.Deletions = make([]eventstore.Deletion, 0, n)
	}
	for i := uint64(0); d.err == nil && i < n; i++ {
		var x eventstore.Deletion
		x.Seq = d.int64("deletion seq")
		x.RootMsgID, x.Venue, x.Sender, x.SenderDID = d.string("root msgid"), d.string("venue"), d.string("sender"), d.string("sender did")
		x.At = time.UnixMilli(d.varint("deletion time")).UTC()
		x.Tags = d.tags()
		d.inSpan(b.Dels, x.Seq, "a deletion")
		b.Deletions = append(b.Deletions, x)
	}
	b.Reacts, n = d.section("reactions")
	if d.err == nil && n > 0 {
		b.Reactions = make([]eventstore.ReactionEvent, 0, n)
	}
	for i := uint64(0); d.err == nil && i < n; i++ {
		var r eventstore.ReactionEvent
		r.Seq = d.int64("reaction seq")
		r.EventID, r.Root, r.Reactor = d.string("event msgid"), d.string("root msgid"), d.string("reactor")
		r.ReactorNick, r.Emoji, r.Venue = d.string("reactor nick"), d.string("emoji"), d.string("venue")
		r.Sender, r.SenderDID = d.string("sender"), d.string("sender did")
		r.Remove = d.bool("remove")
		r.At = time.UnixMilli(d.varint("reaction time")).UTC()
		r.Tags = d.tags()
		d.inSpan(b.Reacts, r.Seq, "a reaction")
		b.Reactions = append(b.Reactions, r)
	}
	if d.err != nil {
		return streamBatch{}, d.err
	}
	if len(d.buf) != 0 {
		return streamBatch{}, errors.New("batch: trailing bytes")
	}
	return b, nil
}
