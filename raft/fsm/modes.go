package fsm

import (
	"strconv"
	"strings"
)

// mode applies the permitted subset of a list of mode changes. Privileges: channel ops (and the
// founder and server operators) may change everything; halfops may only change +v. The founder
// cannot be de-opped: such a change is dropped silently. +o on an authenticated user also makes
// its DID a persistent DID op; -o removes it.
func (a *Applier) mode(c Mode) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	me := ch.members[se.ID]
	isOp := a.st.isChannelOp(ch, se)
	isHalf := me != nil && me.HalfOp
	var res Result
	opNeededReported := false
	refuse := func(mc ModeChange, code Code) {
		if code == ErrChanOpNeeded {
			if opNeededReported {
				return
			}
			opNeededReported = true
		}
		res.Failed = append(res.Failed, ModeFailure{Change: mc, Code: code})
	}
	for _, mc := range c.Changes {
		switch mc.Mode {
		case "o", "h", "v":
			if !(isOp || (mc.Mode == "v" && isHalf)) {
				refuse(mc, ErrChanOpNeeded)
				continue
			}
			target := a.st.sessions[mc.Target]
			if target == nil || ch.members[target.ID] == nil {
				refuse(mc, ErrUserNotInChannel)
				continue
			}
			if a.setPrefix(ch, target, mc) {
				mc.Arg = target.Nick
				res.Applied = append(res.Applied, mc)
			}
		case "b", "e", "I":
			if !isOp {
				refuse(mc, ErrChanOpNeeded)
				continue
			}
			mask := strings.TrimSpace(mc.Arg)
			if mask == "" {
				continue
			}
			list := &ch.Bans
			switch mc.Mode {
			case "I":
				list = &ch.Exceptions
			case "e":
				list = &ch.BanExceptions
			}
			changed, full := editList(list, mc.Add, mask, se.Hostmask(), a.env.Time)
			if full {
				refuse(mc, ErrListFull)
				continue
			}
			if changed {
				mc.Arg = mask
				res.Applied = append(res.Applied, mc)
			}
		case "i", "t", "n", "m", "E", "s", "C":
			if !isOp {
				refuse(mc, ErrChanOpNeeded)
				continue
			}
			flag := map[string]*bool{"i": &ch.InviteOnly, "t": &ch.TopicLock, "n": &ch.NoExternal, "m": &ch.Moderated, "E": &ch.Encrypted, "s": &ch.Secret, "C": &ch.NoCTCP}[mc.Mode]
			if *flag != mc.Add {
				*flag = mc.Add
				mc.Arg, mc.Target = "", ""
				res.Applied = append(res.Applied, mc)
			}
		case "l":
			if !isOp {
				refuse(mc, ErrChanOpNeeded)
				continue
			}
			if applied, ok := setLimit(ch, mc); !ok {
				refuse(mc, ErrInvalid)
			} else if applied {
				mc.Arg, mc.Target = "", ""
				if mc.Add {
					mc.Arg = strconv.Itoa(ch.Limit)
				}
				res.Applied = append(res.Applied, mc)
			}
		case "k":
			if !isOp {
				refuse(mc, ErrChanOpNeeded)
				continue
			}
			if mc.Add {
				key := strings.TrimSpace(mc.Arg)
				if key == "" || strings.ContainsAny(key, " ,") || len(key) > 64 {
					refuse(mc, ErrInvalid)
					continue
				}
				if ch.Key != key {
					ch.Key = key
					res.Applied = append(res.Applied, ModeChange{Add: true, Mode: "k", Arg: key})
				}
			} else if ch.Key != "" {
				ch.Key = ""
				res.Applied = append(res.Applied, ModeChange{Add: false, Mode: "k"})
			}
		default:
			refuse(mc, ErrInvalid)
		}
	}
	if len(res.Applied) == 0 {
		res.Code = NoChange
		if len(res.Failed) > 0 {
			res.Code = res.Failed[0].Code
		}
		return res
	}
	a.emit(Event{Kind: EvMode, Actor: se.Ref(), Channel: ch.Name, Modes: res.Applied})
	return res
}

// setPrefix applies ±o/h/v to a member and reports whether anything changed.
func (a *Applier) setPrefix(ch *Channel, target *Session, mc ModeChange) bool {
	m := ch.members[target.ID]
	switch mc.Mode {
	case "o":
		if !mc.Add && target.DID != "" && target.DID == ch.FounderDID {
			return false
		}
		changed := m.Op != mc.Add
		m.Op = mc.Add
		if target.DID != "" {
			if mc.Add {
				if ch.didOps == nil {
					ch.didOps = map[string]bool{}
				}
				if !ch.didOps[target.DID] {
					ch.didOps[target.DID] = true
					changed = true
				}
			} else if ch.didOps[target.DID] {
				delete(ch.didOps, target.DID)
				changed = true
			}
		}
		return changed
	case "h":
		changed := m.HalfOp != mc.Add
		m.HalfOp = mc.Add
		return changed
	default:
		changed := m.Voice != mc.Add
		m.Voice = mc.Add
		return changed
	}
}

// editList adds or removes a mask (compared case-insensitively, DIDs exactly) and reports whether
// the list changed and whether an add was refused because the list is full.
func editList(list *[]ListEntry, add bool, mask, setBy string, at int64) (changed, full bool) {
	idx := -1
	for i, e := range *list {
		if sameMask(e.Mask, mask) {
			idx = i
			break
		}
	}
	if add {
		if idx >= 0 {
			return false, false
		}
		if len(*list) >= MaxListEntries {
			return false, true
		}
		*list = append(*list, ListEntry{Mask: mask, SetBy: setBy, SetAt: at})
		return true, false
	}
	if idx < 0 {
		return false, false
	}
	*list = append((*list)[:idx:idx], (*list)[idx+1:]...)
	return true, false
}

func sameMask(a, b string) bool {
	if strings.HasPrefix(a, "did:") || strings.HasPrefix(b, "did:") {
		return a == b
	}
	return Fold(a) == Fold(b)
}

// maxChannelLimit bounds +l.
const maxChannelLimit = 1 << 20

// setLimit applies ±l: +l takes a positive decimal count of members, -l removes the limit. It
// reports whether the channel changed and whether the change was valid.
func setLimit(ch *Channel, mc ModeChange) (applied, ok bool) {
	if !mc.Add {
		if ch.Limit == 0 {
			return false, true
		}
		ch.Limit = 0
		return true, true
	}
	n := 0
	for _, r := range mc.Arg {
		if r < '0' || r > '9' || n > maxChannelLimit {
			return false, false
		}
		n = n*10 + int(r-'0')
	}
	if n <= 0 || n > maxChannelLimit {
		return false, false
	}
	if ch.Limit == n {
		return false, true
	}
	ch.Limit = n
	return true, true
}
