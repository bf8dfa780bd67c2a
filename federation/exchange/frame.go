package exchange

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
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
// A batch is: version (1 byte, 1), after (uvarint: the origin seq the batch follows), last
// (uvarint: the origin seq it runs through), the number of events (uvarint), then each event:
// origin_seq (uvarint), msgid, venue, command, sender, sender_nick, sender_did, text (strings),
// the number of tags (uvarint) and each tag's key and value (strings, keys in ascending order),
// time_ms (varint), replaces_msgid, incarnation (strings), public (1 byte, 0 or 1), status
// (string). A string is its length in bytes (uvarint) and its bytes.

const frameVersion = 1

// Bounds a decoder enforces before allocating.
const (
	maxFrameEvents = 4096
	maxFrameTags   = 64
)

// streamBatch is one frame's content: the events an origin stored with after < origin seq <= last,
// all of them: the receiver may move its cursor to last once it stored them, if it had stored
// everything through after.
type streamBatch struct {
	After, Last int64
	Events      []Event
}

// appendBatch appends b's binary form to dst.
func appendBatch(dst []byte, b streamBatch) []byte {
	dst = appendBatchHead(dst, b.After, b.Last, len(b.Events))
	for i := range b.Events {
		dst = appendEvent(dst, &b.Events[i])
	}
	return dst
}

// appendBatchHead appends what precedes a batch's n events: a batch is its head followed by the
// events' forms (appendEvent), so an event encoded once can go into the frames of every peer.
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
	dst = binary.AppendUvarint(dst, uint64(len(e.Tags)))
	switch len(e.Tags) {
	case 0:
	case 1:
		for k, v := range e.Tags {
			dst = appendString(dst, k)
			dst = appendString(dst, v)
		}
	default:
		for _, k := range slices.Sorted(maps.Keys(e.Tags)) {
			dst = appendString(dst, k)
			dst = appendString(dst, e.Tags[k])
		}
	}
	dst = binary.AppendVarint(dst, e.TimeMS)
	dst = appendString(dst, e.ReplacesMsgID)
	dst = appendString(dst, e.Incarnation)
	if e.Public {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	return appendString(dst, e.Status)
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

// decodeBatch parses a batch's binary form. It checks the form only (counts, lengths, key order);
// what a receiver relies on in each event is Event.validate's.
func decodeBatch(buf []byte) (streamBatch, error) {
	d := &decoder{buf: buf}
	if v := d.byte("version"); d.err == nil && v != frameVersion {
		return streamBatch{}, fmt.Errorf("batch: version %d, want %d", v, frameVersion)
	}
	b := streamBatch{After: d.int64("after"), Last: d.int64("last")}
	n := d.uvarint("event count")
	if d.err == nil && (n > maxFrameEvents || n > uint64(len(d.buf))) {
		d.fail("event count")
	}
	if d.err == nil && b.Last < b.After {
		d.fail("range")
	}
	if d.err != nil {
		return streamBatch{}, d.err
	}
	b.Events = make([]Event, 0, n)
	for range n {
		var e Event
		e.OriginSeq = d.int64("origin seq")
		e.MsgID, e.Venue, e.Command = d.string("msgid"), d.string("venue"), d.string("command")
		e.Sender, e.SenderNick, e.SenderDID = d.string("sender"), d.string("sender nick"), d.string("sender did")
		e.Text = d.string("text")
		tags := d.uvarint("tag count")
		if d.err == nil && (tags > maxFrameTags || tags > uint64(len(d.buf))) {
			d.fail("tag count")
		}
		if d.err == nil && tags > 0 {
			e.Tags = make(map[string]string, tags)
			prev := ""
			for i := range tags {
				k, v := d.string("tag key"), d.string("tag value")
				if d.err == nil && i > 0 && k <= prev {
					d.fail("tag order")
				}
				prev = k
				e.Tags[k] = v
			}
		}
		e.TimeMS = d.varint("time")
		e.ReplacesMsgID, e.Incarnation = d.string("replaces msgid"), d.string("incarnation")
		switch d.byte("public") {
		case 0:
		case 1:
			e.Public = true
		default:
			d.fail("public")
		}
		e.Status = d.string("status")
		if d.err != nil {
			return streamBatch{}, d.err
		}
		if e.OriginSeq <= b.After || e.OriginSeq > b.Last {
			return streamBatch{}, errors.New("batch: an event outside the batch's range")
		}
		b.Events = append(b.Events, e)
	}
	if len(d.buf) != 0 {
		return streamBatch{}, errors.New("batch: trailing bytes")
	}
	return b, nil
}
