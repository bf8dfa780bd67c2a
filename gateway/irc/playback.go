package irc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Event playback (IRCv3 draft/event-playback). A channel's JOIN, PART, QUIT, KICK, MODE, TOPIC,
// NICK and RENAME lines are kept in its history: every node files them from the applied Raft log
// (a subscriber of the Applied stream, in log order), each with a msgid and a time derived from
// the log entry alone: the time the proposer stamped, and a ULID of that time whose entropy is the
// entry's index and the event's position in it. Every node therefore holds the same lines under
// the same msgids, and CHATHISTORY answers alike on every node. The lines are kept as long as the
// channel's messages (there is no retention of either yet); a channel serves only the lines of
// its current incarnation (fsm.State.ChannelLogStart), and a channel renamed onto a former
// channel's name drops that channel's lines.
//
// The live lines carry the same msgid (render in events.go), so a client knows a replayed event
// it saw. Only clients that negotiated draft/event-playback and batch get the kept lines,
// interleaved with the messages in CHATHISTORY batches and in the replay after JOIN, as the
// original lines with their time and msgid; the others see messages only. They are never messages: the REST routes, search
// and export do not serve them. Lines are missing where a node skipped entries (it installed a
// snapshot instead of applying them), or that it applied before it began filing (Raft catches up
// before the edge starts: a node that joined later applied the whole log then): PlaybackGap says
// through which entry, and the exchange files those entries' lines from the peers, which hold the
// same rows.

const eventPlaybackCap = "draft/event-playback"

// PlaybackStore keeps channel events (node/eventstore.Store implements it).
type PlaybackStore interface {
	FileChannelEvents(ctx context.Context, evs []eventstore.ChannelEvent) error
	DropChannelEvents(ctx context.Context, venue string, beforeIndex uint64) error
	ChannelEventByID(ctx context.Context, venue, msgid string) (eventstore.ChannelEvent, error)
	OldestEvents(ctx context.Context, venue string, lo, hi eventstore.EventPos, sinceIndex uint64, limit int) ([]eventstore.ChannelEvent, error)
	NewestEvents(ctx context.Context, venue string, lo, hi eventstore.EventPos, sinceIndex uint64, limit int) ([]eventstore.ChannelEvent, error)
	// Playback is the history with the TAGMSGs kept in it, which only draft/event-playback
	// clients read.
	Playback() eventstore.Playback
}

// EnablePlayback files the channel events of every applied entry in store and serves them to
// draft/event-playback clients. Call it once, before the node serves. It subscribes to Applied
// with Backpressure: a proposer's command returns once its events are filed, so its client's
// next CHATHISTORY holds them.
func (s *Server) EnablePlayback(store PlaybackStore, st *stream.Streams) error {
	if store == nil || st == nil {
		return fmt.Errorf("irc: event playback needs an event store and the node's streams")
	}
	s.playback, s.events = store, store.Playback()
	if err := st.Applied.Subscribe("playback", stream.Backpressure, s.fileEntry); err != nil {
		return fmt.Errorf("irc: event playback: %w", err)
	}
	// Read after subscribing: every entry after this index is filed here.
	var applied uint64
	s.state.Read(func(st *fsm.State) { applied = st.Index() })
	s.notePlaybackGap(applied)
	return nil
}

// PlaybackGap is the last log index of the entries whose channel events this node did not file
// itself: those applied before it began filing (at start, when Raft caught up first: every
// earlier entry, for a node that joined later) and those a snapshot replaced. The exchange fills
// them in from the peers (exchange.Config.EventsGap). 0: none.
func (s *Server) PlaybackGap() uint64 { return s.playbackGap.Load() }

func (s *Server) notePlaybackGap(through uint64) {
	for {
		old := s.playbackGap.Load()
		if through <= old || s.playbackGap.CompareAndSwap(old, through) {
			return
		}
	}
}

// fileEntry files the channel events of one applied entry.
func (s *Server) fileEntry(e stream.Entry) {
	if e.Resync {
		s.log.Info("event playback: entries were skipped; their channel events are filled in from the peers", "through", e.Index)
		s.notePlaybackGap(e.Index)
		return
	}
	// Not the edge's context: the entries applied while the node stops are filed too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rows []eventstore.ChannelEvent
	for i := range e.Events {
		ev := &e.Events[i]
		if ev.Kind == fsm.EvRename {
			if err := s.playback.DropChannelEvents(ctx, ev.Channel, ev.Index); err != nil {
				s.log.Error("event playback: drop", "venue", ev.Channel, "err", err)
			}
		}
		rows = append(rows, playbackRows(ev, i, s.cfg.ServerName)...)
	}
	if err := s.playback.FileChannelEvents(ctx, rows); err != nil && !errors.Is(err, eventstore.ErrClosed) {
		s.log.Error("event playback: file", "index", e.Index, "err", err)
	}
}

// playbackID is the msgid of the sub-th line of the event at position pos of a log entry: a ULID
// of the proposer's time whose entropy is the entry's index (48 bits) and 2*pos+sub (32 bits).
func playbackID(e *fsm.Event, pos, sub int) string {
	var id ulid.ULID
	_ = id.SetTime(uint64(max(e.Time, 0)) & ulid.MaxTime()) // the mask keeps it in range
	var entropy [10]byte
	var idx [8]byte
	binary.BigEndian.PutUint64(idx[:], e.Index)
	copy(entropy[:6], idx[2:])
	binary.BigEndian.PutUint32(entropy[6:], uint32(2*pos+sub))
	_ = id.SetEntropy(entropy[:]) // always 10 bytes
	return id.String()
}

// playbackRows are the history lines of an event: none for an event no channel shows.
func playbackRows(e *fsm.Event, pos int, serverName string) []eventstore.ChannelEvent {
	at := time.UnixMilli(e.Time)
	src := e.Actor.Hostmask()
	row := func(venue string, sub int, source, account, command string, params ...string) eventstore.ChannelEvent {
		return eventstore.ChannelEvent{Venue: venue, MsgID: playbackID(e, pos, sub), Time: at, Index: e.Index,
			Command: command, Source: source, Account: account, Params: params}
	}
	perChannel := func(source, command string, params ...string) []eventstore.ChannelEvent {
		out := make([]eventstore.ChannelEvent, 0, len(e.Channels))
		for _, name := range e.Channels {
			out = append(out, row(name, 0, source, e.Actor.DID, command, params...))
		}
		return out
	}
	switch e.Kind {
	case fsm.EvJoin:
		account := e.Actor.DID
		if account == "" {
			account = "*"
		}
		out := []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "JOIN", e.Channel, account, e.Actor.Realname)}
		if params := joinModeParams(e); params != nil {
			out = append(out, row(e.Channel, 1, serverName, "", "MODE", params...))
		}
		return out
	case fsm.EvPart:
		if e.Text != "" {
			return []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "PART", e.Channel, e.Text)}
		}
		return []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "PART", e.Channel)}
	case fsm.EvKick:
		return []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "KICK", e.Channel, e.Target.Nick, e.Text)}
	case fsm.EvTopic:
		return []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "TOPIC", e.Channel, e.Text)}
	case fsm.EvMode:
		if e.Channel == "" || len(e.Modes) == 0 {
			return nil
		}
		return []eventstore.ChannelEvent{row(e.Channel, 0, src, e.Actor.DID, "MODE", append([]string{e.Channel}, modeParams(e.Modes)...)...)}
	case fsm.EvQuit:
		return perChannel(src, "QUIT", e.Text)
	case fsm.EvNick:
		old := e.Actor
		old.Nick = e.OldNick
		return perChannel(old.Hostmask(), "NICK", e.Actor.Nick)
	case fsm.EvRename:
		return []eventstore.ChannelEvent{
			row(e.OldChannel, 0, src, e.Actor.DID, "RENAME", e.OldChannel, e.Channel, e.Text),
			row(e.Channel, 0, src, e.Actor.DID, "RENAME", e.OldChannel, e.Channel, e.Text),
		}
	}
	return nil
}

// wantsPlayback reports whether a channel venue's history for this client includes its events.
func (c *client) wantsPlayback(venue string) bool {
	return c.s.playback != nil && c.has(capEventPlayback) && c.has(capBatch) && len(venue) > 0 && (venue[0] == '#' || venue[0] == '&')
}

// eventOut renders a stored event as its original line for this client; nil when the client
// would not understand it (RENAME without draft/channel-rename).
func (c *client) eventOut(ev *eventstore.ChannelEvent, batchID string) *outMsg {
	params := ev.Params
	trailing := false
	switch ev.Command {
	case "JOIN":
		if c.has(capExtendedJoin) {
			trailing = true
		} else if len(params) > 1 {
			params = params[:1]
		}
	case "RENAME":
		if !c.has(capChannelRename) {
			return nil
		}
		trailing = true
	case "TOPIC", "KICK", "QUIT":
		trailing = true
	case "PART":
		trailing = len(params) > 1
	}
	return &outMsg{msg: ircmsg.Message{Source: ev.Source, Command: ev.Command, Params: params, ForceTrailing: trailing},
		time: serverTime(ev.Time), msgid: ev.MsgID, account: ev.Account, batch: batchID}
}

// joinModeParams are the parameters of the MODE line that gives a joiner the prefixes it joined
// with (a channel founder or DID operator joining an existing channel); nil for none.
func joinModeParams(e *fsm.Event) []string {
	if e.Created || !(e.Member.Op || e.Member.Voice) {
		return nil
	}
	modes, args := "+", []string{}
	if e.Member.Op {
		modes += "o"
		args = append(args, e.Actor.Nick)
	}
	if e.Member.Voice {
		modes += "v"
		args = append(args, e.Actor.Nick)
	}
	return append([]string{e.Channel, modes}, args...)
}
