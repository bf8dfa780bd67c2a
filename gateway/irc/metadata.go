package irc

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/meta"
)

// draft/metadata-2 (IRCv3 metadata): METADATA GET, LIST, SET, CLEAR, SUB, UNSUB, SUBS and SYNC.
// draft/metadata-3 is the same protocol with three differences in the replies, which a client
// that negotiated it gets: the target `*` is answered under the client's nick, the keys of 770,
// 771 and 772 are one parameter each rather than one space-separated list, and a refused value is
// FAIL METADATA INVALID_VALUE (draft/metadata-2: VALUE_INVALID). freeq's clients speak
// draft/metadata-2, which keeps its replies.
//
// The keys are replicated (raft/fsm/meta): a user's belong to its DID, so profile data
// such as avatar, display-name or homepage follows the user to every session and node; a guest's
// end with its session; a channel's are set by its operators. Subscriptions belong to the
// connection. A change is announced with METADATA to the clients with the capability that are
// subscribed to the key and see the target: a channel's members, or the users sharing a channel
// with the user, its other sessions and, with draft/metadata-notify-2, those monitoring it. A
// client that joins a channel gets the channel's and its members' subscribed keys, or 774 (sync
// later) for a channel larger than metadataJoinSync.

const (
	metadataCap       = "draft/metadata-2"
	metadataNotifyCap = "draft/metadata-notify-2"
	metadata3Cap      = "draft/metadata-3"
	// maxMetadataSubs bounds a connection's subscriptions (max-subs).
	maxMetadataSubs = 50
	// metadataJoinSync is the largest channel whose members' metadata a JOIN sends at once.
	metadataJoinSync = 100
)

// metadataCapValue is the capability's value: its limits.
var metadataCapValue = "max-subs=" + strconv.Itoa(maxMetadataSubs) + ",max-keys=" + strconv.Itoa(meta.MaxKeys) +
	",max-value-bytes=" + strconv.Itoa(meta.MaxValueBytes)

// metadataSubs holds every local connection's subscribed keys.
type metadataSubs struct {
	// lock tier 9 (leaf): guards the map only
	mu   sync.Mutex
	subs map[*client]map[string]bool
}

func (m *metadataSubs) has(c *client, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subs[c][key]
}

// keys is c's subscriptions, sorted.
func (m *metadataSubs) keys(c *client) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.subs[c]))
	for k := range m.subs[c] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// subscribe adds keys in order; it stops at the first key past maxMetadataSubs and returns it.
func (m *metadataSubs) subscribe(c *client, keys []string) (ok []string, tooMany string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subs == nil {
		m.subs = map[*client]map[string]bool{}
	}
	set := m.subs[c]
	for _, k := range keys {
		if set[k] {
			ok = append(ok, k)
			continue
		}
		if len(set) >= maxMetadataSubs {
			return ok, k
		}
		if set == nil {
			set = map[string]bool{}
			m.subs[c] = set
		}
		set[k] = true
		ok = append(ok, k)
	}
	return ok, ""
}

func (m *metadataSubs) unsubscribe(c *client, keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.subs[c], k)
	}
	if len(m.subs[c]) == 0 {
		delete(m.subs, c)
	}
}

func (m *metadataSubs) drop(c *client) {
	m.mu.Lock()
	delete(m.subs, c)
	m.mu.Unlock()
}

// forgetClient drops what the conformance features keep per connection (MONITOR list, metadata
// subscriptions) when the connection ends.
func (s *Server) forgetClient(c *client) {
	s.monitors.remove(c, nil, true)
	s.metaSubs.drop(c)
}

// handleMETADATA answers METADATA <target> <subcommand> [params].
func handleMETADATA(c *client, m ircmsg.Message, rb *respBuf) {
	target, sub := m.Param(0), strings.ToUpper(m.Param(1))
	fail := func(code, text string, ctx ...string) { rb.add(c.failMsg("METADATA", code, text, ctx...)) }
	if !c.registered.Load() {
		c.metadataBeforeConnect(rb, target, sub, m.Params[2:])
		return
	}
	switch sub {
	case "SUB", "UNSUB":
		c.metadataSubscribe(rb, sub == "SUB", splitKeys(m.Params[2:]))
		return
	case "SUBS":
		for _, l := range c.keyLists("772", c.s.metaSubs.keys(c)) {
			rb.add(l)
		}
		return
	case "GET", "LIST", "SET", "CLEAR", "SYNC":
	default:
		fail("SUBCOMMAND_INVALID", "Invalid subcommand", m.Param(1))
		return
	}
	var t meta.Target
	var found bool
	c.s.state.Read(func(st *fsm.State) { t, found = meta.Of(st).Resolve(target, c.id, c.currentDID()) })
	if !found || !t.Readable {
		fail("INVALID_TARGET", "Invalid target", target)
		return
	}
	if target == "*" && c.has(capMetadata3) {
		target = c.nick
	}
	switch sub {
	case "GET":
		if len(m.Params) < 3 {
			rb.add(c.numericMsg("461", "METADATA", "Not enough parameters"))
			return
		}
		keys := c.metadataOf(t.Owner)
		var lines []ircmsg.Message
		for _, k := range splitKeys(m.Params[2:]) {
			switch v, ok := keys[k]; {
			case !meta.ValidKey(k):
				lines = append(lines, c.failMsg("METADATA", "KEY_INVALID", "Invalid key", k))
			case ok:
				lines = append(lines, c.numericMsg("761", target, k, "*", v))
			default:
				lines = append(lines, c.numericMsg("766", target, k, "key not set"))
			}
		}
		c.metadataBatch(rb, target, lines)
	case "LIST":
		keys := c.metadataOf(t.Owner)
		var lines []ircmsg.Message
		for _, k := range sortedKeys(keys) {
			lines = append(lines, c.numericMsg("761", target, k, "*", keys[k]))
		}
		c.metadataBatch(rb, target, lines)
	case "SET":
		c.metadataSet(rb, target, t, m.Params[2:])
	case "CLEAR":
		if !t.Self && !t.Op {
			fail("KEY_NO_PERMISSION", "You may not clear the metadata of "+target, target, "*")
			return
		}
		res, err := c.propose(meta.Clear{Session: c.id, Channel: t.Channel})
		if err != nil || (res.Code != fsm.OK && res.Code != fsm.NoChange) {
			c.metadataFailure(rb, target, "*", res.Code, err)
			return
		}
		var lines []ircmsg.Message
		for _, k := range res.List {
			lines = append(lines, c.numericMsg("766", target, k, "key not set"))
		}
		c.metadataBatch(rb, target, lines)
	case "SYNC":
		c.metadataBatch(rb, target, c.metadataSync(t, c.s.metaSubs.keys(c), c.nick, 0))
	}
}

// metadataSet handles METADATA <target> SET <key> [value]: no value removes the key.
func (c *client) metadataSet(rb *respBuf, target string, t meta.Target, args []string) {
	if len(args) == 0 {
		rb.add(c.numericMsg("461", "METADATA", "Not enough parameters"))
		return
	}
	key := args[0]
	switch {
	case !meta.ValidKey(key):
		rb.add(c.failMsg("METADATA", "KEY_INVALID", "Invalid key", key))
		return
	case !t.Self && !t.Op:
		rb.add(c.failMsg("METADATA", "KEY_NO_PERMISSION", "You may not set "+key+" on "+target, target, key))
		return
	case len(args) > 1 && len(args[1]) > meta.MaxValueBytes:
		rb.add(c.valueInvalid(target, key, "Value longer than "+strconv.Itoa(meta.MaxValueBytes)+" bytes"))
		return
	case len(args) > 1 && !utf8.ValidString(args[1]):
		rb.add(c.valueInvalid(target, key, "Values must be UTF-8"))
		return
	}
	cmd := meta.Set{Session: c.id, Channel: t.Channel, Key: key, Delete: len(args) == 1}
	if !cmd.Delete {
		cmd.Value = args[1]
	}
	res, err := c.propose(cmd)
	if err != nil || (res.Code != fsm.OK && res.Code != fsm.NoChange) {
		c.metadataFailure(rb, target, key, res.Code, err)
		return
	}
	if cmd.Delete {
		rb.add(c.numericMsg("766", target, key, "key not set"))
		return
	}
	rb.add(c.numericMsg("761", target, key, "*", cmd.Value))
}

// metadataBeforeConnect handles METADATA before registration (draft/metadata-3's before-connect):
// SET and GET of the client's own keys (target *), kept on the connection until registration
// applies them (applyPreMetadata). Anything else waits for registration (451).
func (c *client) metadataBeforeConnect(rb *respBuf, target, sub string, args []string) {
	if target != "*" || (sub != "SET" && sub != "GET") || len(args) == 0 {
		rb.add(c.numericMsg("451", "You have not registered"))
		return
	}
	if sub == "GET" {
		var lines []ircmsg.Message
		for _, k := range splitKeys(args) {
			if v, ok := c.preMetadata[k]; ok {
				lines = append(lines, c.metadataLine(target, k, v))
			} else {
				lines = append(lines, c.numericMsg("766", target, k, "key not set"))
			}
		}
		c.metadataBatch(rb, target, lines)
		return
	}
	key := args[0]
	_, set := c.preMetadata[key]
	switch {
	case !meta.ValidKey(key):
		rb.add(c.failMsg("METADATA", "KEY_INVALID", "Invalid key", key))
	case len(args) == 1:
		delete(c.preMetadata, key)
		rb.add(c.numericMsg("766", target, key, "key not set"))
	case len(args[1]) > meta.MaxValueBytes:
		rb.add(c.valueInvalid(target, key, "Value longer than "+strconv.Itoa(meta.MaxValueBytes)+" bytes"))
	case !utf8.ValidString(args[1]):
		rb.add(c.valueInvalid(target, key, "Values must be UTF-8"))
	case !set && len(c.preMetadata) >= meta.MaxKeys:
		rb.add(c.failMsg("METADATA", "LIMIT_REACHED", "Metadata limit reached", target))
	default:
		if c.preMetadata == nil {
			c.preMetadata = map[string]string{}
		}
		c.preMetadata[key] = args[1]
		rb.add(c.metadataLine(target, key, args[1]))
	}
}

// applyPreMetadata sets the keys given before registration on the new session, in key order.
func (c *client) applyPreMetadata(rb *respBuf) {
	for _, key := range sortedKeys(c.preMetadata) {
		res, err := c.propose(meta.Set{Session: c.id, Key: key, Value: c.preMetadata[key]})
		if err != nil || (res.Code != fsm.OK && res.Code != fsm.NoChange) {
			c.metadataFailure(rb, c.nick, key, res.Code, err)
		}
	}
	c.preMetadata = nil
}

// metadataFailure answers a refused or failed metadata change.
func (c *client) metadataFailure(rb *respBuf, target, key string, code fsm.Code, err error) {
	fail := func(code, text string, ctx ...string) { rb.add(c.failMsg("METADATA", code, text, ctx...)) }
	switch {
	case err != nil:
		fail("TEMPORARILY_UNAVAILABLE", "Try again", target)
	case code == meta.ErrKeyNotSet:
		fail("KEY_NOT_SET", "Key not set", target, key)
	case code == meta.ErrLimit:
		fail("LIMIT_REACHED", "Metadata limit reached", target)
	case code == meta.ErrKeyNoPermission:
		fail("KEY_NO_PERMISSION", "Permission denied", target, key)
	case code == fsm.ErrNoSuchChannel, code == fsm.ErrNoSuchSession:
		fail("INVALID_TARGET", "Invalid target", target)
	default:
		rb.add(c.valueInvalid(target, key, "Invalid key or value"))
	}
}

// valueInvalid refuses a value: FAIL METADATA VALUE_INVALID <target> <key> for draft/metadata-2,
// FAIL METADATA INVALID_VALUE <key> for draft/metadata-3.
func (c *client) valueInvalid(target, key, text string) ircmsg.Message {
	if c.has(capMetadata3) {
		return c.failMsg("METADATA", "INVALID_VALUE", text, key)
	}
	return c.failMsg("METADATA", "VALUE_INVALID", text, target, key)
}

// keyLists renders a reply listing keys (770, 771, 772): for draft/metadata-3 each key is a
// parameter of its own, for draft/metadata-2 the keys are one space-separated parameter; long
// lists take several lines.
func (c *client) keyLists(numeric string, keys []string) []ircmsg.Message {
	var out []ircmsg.Message
	for _, chunk := range spaceChunks(keys) {
		if c.has(capMetadata3) {
			out = append(out, c.numericMsg(numeric, strings.Fields(chunk)...))
		} else {
			out = append(out, c.numericMsg(numeric, chunk))
		}
	}
	return out
}

// metadataSubscribe handles SUB and UNSUB.
func (c *client) metadataSubscribe(rb *respBuf, sub bool, keys []string) {
	var valid []string
	for _, k := range keys {
		if meta.ValidKey(k) {
			valid = append(valid, k)
		} else {
			rb.add(c.failMsg("METADATA", "KEY_INVALID", "Invalid key", k))
		}
	}
	if !sub {
		c.s.metaSubs.unsubscribe(c, valid)
		for _, l := range c.keyLists("771", valid) {
			rb.add(l)
		}
		return
	}
	ok, tooMany := c.s.metaSubs.subscribe(c, valid)
	if tooMany != "" {
		rb.add(c.failMsg("METADATA", "TOO_MANY_SUBS", "Too many subscriptions", tooMany))
	}
	for _, l := range c.keyLists("770", ok) {
		rb.add(l)
	}
}

// metadataOf reads an owner's keys.
func (c *client) metadataOf(owner string) map[string]string {
	var keys map[string]string
	c.s.state.Read(func(st *fsm.State) { keys = meta.Of(st).Keys(owner) })
	return keys
}

// metadataSync renders the subscribed keys of a target as METADATA lines: a user's, or a
// channel's and its members'. With limit > 0 a channel of more members gets 774 (addressed to
// nick) instead. It never reads the client's own fields: the renderer calls it too.
func (c *client) metadataSync(t meta.Target, subs []string, nick string, limit int) []ircmsg.Message {
	if len(subs) == 0 {
		return nil
	}
	if limit > 0 && t.Members > limit {
		return []ircmsg.Message{{Source: c.s.cfg.ServerName, Command: "774", Params: []string{nick, t.Channel, "5"}}}
	}
	var own map[string]string
	var members []meta.NickKeys
	c.s.state.Read(func(st *fsm.State) {
		v := meta.Of(st)
		own = v.Keys(t.Owner)
		if t.Channel != "" {
			members = v.Members(t.Channel)
		}
	})
	name := t.Nick
	if t.Channel != "" {
		name = t.Channel
	}
	var out []ircmsg.Message
	add := func(target string, keys map[string]string) {
		for _, k := range subs {
			if v, ok := keys[k]; ok {
				out = append(out, c.metadataLine(target, k, v))
			}
		}
	}
	add(name, own)
	for _, nm := range members {
		add(nm.Nick, nm.Keys)
	}
	return out
}

// metadataLine is the server's line telling c one key of a target: METADATA for
// draft/metadata-2, 761 (RPL_KEYVALUE) for draft/metadata-3.
func (c *client) metadataLine(target, key, value string) ircmsg.Message {
	if c.has(capMetadata3) {
		return c.numericMsg("761", target, key, "*", value)
	}
	return ircmsg.Message{Source: c.s.cfg.ServerName, Command: "METADATA", Params: []string{target, key, "*", value}, ForceTrailing: true}
}

// metadataBatch adds lines in a metadata batch (for a client with batch), which names its target
// for draft/metadata-3.
func (c *client) metadataBatch(rb *respBuf, target string, lines []ircmsg.Message) {
	if !c.has(capBatch) {
		for _, l := range lines {
			rb.add(l)
		}
		return
	}
	id := c.s.nextBatchID()
	start := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"+" + id, "metadata"}}
	if c.has(capMetadata3) {
		start.Params = append(start.Params, target)
	}
	rb.add(start)
	for _, l := range lines {
		l.SetTag("batch", id)
		rb.add(l)
	}
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"-" + id}})
}

// renderMetadata announces a metadata change, or the metadata of a channel a local client just
// joined. It runs on the render goroutine with s.rendered.mu held.
func (s *Server) renderMetadata(e *fsm.Event) {
	switch e.Kind {
	case fsm.EvJoin:
		s.metadataOnJoin(e)
		return
	case meta.EvChanged:
	default:
		return
	}
	target := e.Channel
	var audience []*client
	if target != "" {
		audience = s.rendered.members(target)
	} else {
		target = e.Actor.Nick
		var own []string
		s.state.Read(func(st *fsm.State) {
			v := meta.Of(st)
			own = v.SessionsOf(v.OwnerOf(e.Actor.ID))
		})
		audience = s.channelsAudience(e.Channels, own...)
		audience = audience[:len(audience):len(audience)] // it may be a channel's own list: never write into it
		for _, w := range s.monitors.watching(e.Actor.Nick) {
			if w.has(capMetadataNotify) && !s.sharesRendered(w, e.Channels) && !slices.Contains(own, w.id) {
				audience = append(audience, w)
			}
		}
	}
	for _, ch := range meta.Changes(e) {
		params := []string{target, ch.Key, "*"}
		if !ch.Deleted {
			params = append(params, ch.Value)
		}
		out := &outMsg{msg: ircmsg.Message{Source: e.Actor.Hostmask(), Command: "METADATA", Params: params, ForceTrailing: !ch.Deleted},
			time: serverTimeMS(e.Time)}
		for _, c := range audience {
			if c.id == e.Actor.ID || !c.has(capAnyMetadata) || !s.metaSubs.has(c, ch.Key) {
				continue
			}
			if !c.has(capMetadata3) {
				c.deliver(out, false)
				continue
			}
			// draft/metadata-3 notifies with the numerics of GET: 761, or 766 for a removed key.
			note := c.metadataLine(target, ch.Key, ch.Value)
			if ch.Deleted {
				note = c.numericMsg("766", target, ch.Key, "key not set")
			}
			c.deliver(&outMsg{msg: note, time: out.time}, false)
		}
	}
}

// metadataOnJoin sends a local client that joined a channel the channel's and its members'
// subscribed keys, after the JOIN's replies.
func (s *Server) metadataOnJoin(e *fsm.Event) {
	c := s.localClient(e.Actor.ID)
	if c == nil || !c.has(capAnyMetadata) {
		return
	}
	subs := s.metaSubs.keys(c)
	if len(subs) == 0 {
		return
	}
	var t meta.Target
	var ok bool
	s.state.Read(func(st *fsm.State) { t, ok = meta.Of(st).Resolve(e.Channel, c.id, e.Actor.DID) })
	if !ok {
		return
	}
	for _, l := range c.metadataSync(t, subs, e.Actor.Nick, metadataJoinSync) {
		c.deliver(&outMsg{msg: l}, false)
	}
}

// splitKeys reads a key list given as parameters, the last of which may hold several keys
// separated by spaces (a line has at most 15 parameters).
func splitKeys(params []string) []string {
	var out []string
	for _, p := range params {
		out = append(out, strings.Fields(p)...)
	}
	return out
}

// ownMetadata sends a client with the capability its own user's keys in a metadata batch (empty
// when it has none), at registration and when it asks for the capability later.
func (c *client) ownMetadata(rb *respBuf) {
	if !c.has(capAnyMetadata) {
		return
	}
	keys := c.metadataOf(c.ownMetadataOwner())
	lines := make([]ircmsg.Message, 0, len(keys))
	for _, k := range sortedKeys(keys) {
		lines = append(lines, c.metadataLine(c.nick, k, keys[k]))
	}
	c.metadataBatch(rb, c.nick, lines)
}

func (c *client) ownMetadataOwner() string {
	var owner string
	c.s.state.Read(func(st *fsm.State) { owner = meta.Of(st).OwnerOf(c.id) })
	return owner
}

// monitorMetadata sends a client with draft/metadata-notify-2 the subscribed keys of the users it
// just started to monitor that are online.
func (c *client) monitorMetadata(rb *respBuf, nicks []string) {
	if !c.has(capMetadataNotify) || len(nicks) == 0 {
		return
	}
	subs := c.s.metaSubs.keys(c)
	for _, nick := range nicks {
		var t meta.Target
		var ok bool
		c.s.state.Read(func(st *fsm.State) { t, ok = meta.Of(st).Resolve(nick, c.id, c.currentDID()) })
		if ok && t.Channel == "" {
			for _, l := range c.metadataSync(t, subs, "", 0) {
				rb.add(l)
			}
		}
	}
}

// monitorOnlineMetadata sends the subscribed keys of a user that came online to the clients with
// draft/metadata-notify-2 monitoring it. s.rendered.mu is held.
func (s *Server) monitorOnlineMetadata(e *fsm.Event) {
	watchers := s.monitors.watching(e.Actor.Nick)
	if len(watchers) == 0 {
		return
	}
	var keys map[string]string
	s.state.Read(func(st *fsm.State) {
		v := meta.Of(st)
		keys = v.Keys(v.OwnerOf(e.Actor.ID))
	})
	if len(keys) == 0 {
		return
	}
	for _, w := range watchers {
		if !w.has(capMetadataNotify) {
			continue
		}
		for _, k := range s.metaSubs.keys(w) {
			if v, ok := keys[k]; ok {
				w.deliver(&outMsg{msg: w.metadataLine(e.Actor.Nick, k, v)}, false)
			}
		}
	}
}

// spaceChunks joins keys with spaces into lists of at most monitorLineBudget bytes.
func spaceChunks(keys []string) []string {
	chunks := commaChunks(keys)
	for i := range chunks {
		chunks[i] = strings.ReplaceAll(chunks[i], ",", " ")
	}
	return chunks
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// whoisMetadataKeys is the subset of a user's metadata WHOIS shows (760 RPL_WHOISKEYVALUE), in
// this order: keys written for people to read, chosen explicitly as draft/metadata-2 asks. The
// rest is for METADATA LIST and GET. Every user key is visible to everyone (visibility "*").
var whoisMetadataKeys = []string{"display-name", "pronouns", "status", "homepage", "url", "website", "avatar", "bot", "color"}

// whoisMetadata adds the 760 lines of a WHOIS of the user whose metadata owner is owner, for a
// client that negotiated draft/metadata-2 (a client without it was never told what 760 means).
func (c *client) whoisMetadata(rb *respBuf, nick, owner string) {
	if !c.has(capAnyMetadata) {
		return
	}
	keys := c.metadataOf(owner)
	for _, k := range whoisMetadataKeys {
		if v, ok := keys[k]; ok {
			rb.add(c.numericMsg("760", nick, k, "*", v))
		}
	}
}

// dropGuestMetadata clears the user metadata a registered guest connection set before it logs
// in: a guest's keys belong to its connection, and once the connection is an account's its keys
// are the account's, so the guest's would otherwise stay in the state until the node forgets the
// session, which for a logged-in session it never does. The clear is proposed only when there is
// something to clear, so a login costs no extra Raft entry.
func (c *client) dropGuestMetadata() error {
	var keys int
	c.s.state.Read(func(st *fsm.State) {
		v := meta.Of(st)
		if owner := v.OwnerOf(c.id); owner != "" && owner != c.currentDID() {
			keys = len(v.Keys(owner))
		}
	})
	if keys == 0 {
		return nil
	}
	if _, err := c.propose(meta.Clear{Session: c.id}); err != nil {
		return fmt.Errorf("clear a guest's metadata before its login: %w", err)
	}
	return nil
}
