package fsm

import "sort"

// nickCheck says whether session id (authenticated as did) may use the folded nick.
func (a *Applier) nickCheck(folded, id, did string) Result {
	if folded == "" || len(folded) > MaxNickLen {
		return Result{Code: ErrBadName}
	}
	if holder, ok := a.st.nicks[folded]; ok && holder != id {
		return Result{Code: ErrNickInUse}
	}
	if owner := a.st.nickOwners[folded]; owner != "" && owner != did {
		return Result{Code: ErrNickOwned, Owner: owner}
	}
	return Result{Code: OK}
}

// claimNick binds nick ownership to did when the nick is free of any owner. A DID owns one nick:
// claiming a new one releases the previous, unless another session of the DID still uses it.
func (a *Applier) claimNick(folded, did string) {
	if did == "" || folded == "" {
		return
	}
	if owner := a.st.nickOwners[folded]; owner != "" {
		return
	}
	if old, ok := a.st.didNicks[did]; ok && old != folded {
		// Keep the nick another session of the same DID is using; move ownership otherwise.
		if id, used := a.st.nicks[old]; used && a.st.sessions[id] != nil && a.st.sessions[id].DID == did {
			return
		}
		delete(a.st.nickOwners, old)
		a.st.noteNick(false, old, did, "")
	}
	a.st.nickOwners[folded] = did
	a.st.noteNick(true, folded, did, "")
	a.st.didNicks[did] = folded
}

func (a *Applier) registerSession(c RegisterSession) Result {
	if c.ID == "" || c.Node == "" || c.User == "" || c.Host == "" {
		return Result{Code: ErrInvalid}
	}
	if _, ok := a.st.sessions[c.ID]; ok {
		return Result{Code: ErrAlreadyRegistered}
	}
	folded := Fold(c.Nick)
	if r := a.nickCheck(folded, c.ID, c.DID); r.Code != OK {
		return r
	}
	a.st.sessions[c.ID] = &Session{
		ID: c.ID, Node: c.Node, Incarnation: c.Incarnation, Nick: c.Nick, User: c.User, Host: c.Host,
		Realname: c.Realname, DID: c.DID, TokenHash: c.TokenHash, Oper: c.Oper, Secure: c.Secure,
		ConnectedAt: a.env.Time, channels: map[string]bool{},
	}
	a.st.nicks[folded] = c.ID
	a.st.noteNick(true, c.Nick, c.DID, c.ID)
	if c.TokenHash != "" {
		a.st.tokens[c.TokenHash] = c.ID
	}
	a.claimNick(folded, c.DID)
	a.emit(Event{Kind: EvRegister, Actor: a.st.sessions[c.ID].Ref()})
	return Result{Code: OK}
}

func (a *Applier) changeNick(c ChangeNick) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	folded, old := Fold(c.Nick), Fold(se.Nick)
	if r := a.nickCheck(folded, se.ID, se.DID); r.Code != OK {
		return r
	}
	if c.Nick == se.Nick {
		return Result{Code: NoChange}
	}
	oldRef := se.Ref()
	delete(a.st.nicks, old)
	a.st.nicks[folded] = se.ID
	se.Nick = c.Nick
	a.st.noteNick(false, oldRef.Nick, se.DID, se.ID)
	a.st.noteNick(true, se.Nick, se.DID, se.ID)
	a.claimNick(folded, se.DID)
	a.emit(Event{Kind: EvNick, Actor: se.Ref(), OldNick: oldRef.Nick, Channels: sortedKeys(se.channels)})
	return Result{Code: OK}
}

func (a *Applier) authenticate(c Authenticate) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if c.DID == "" || c.TokenHash == "" {
		return Result{Code: ErrInvalid}
	}
	if se.TokenHash != "" {
		delete(a.st.tokens, se.TokenHash)
	}
	if se.DID != c.DID {
		a.st.noteNick(false, se.Nick, se.DID, se.ID)
		a.st.noteNick(true, se.Nick, c.DID, se.ID)
	}
	se.DID, se.TokenHash = c.DID, c.TokenHash
	if c.Host != "" {
		se.Host = c.Host
	}
	if c.Oper {
		se.Oper = true
	}
	a.st.tokens[c.TokenHash] = se.ID
	folded := Fold(se.Nick)
	res := Result{Code: OK}
	if owner := a.st.nickOwners[folded]; owner != "" && owner != c.DID {
		res = Result{Code: ErrNickOwned, Owner: owner}
	} else {
		a.claimNick(folded, c.DID)
	}
	a.emit(Event{Kind: EvAccount, Actor: se.Ref(), Channels: sortedKeys(se.channels)})
	return res
}

func (a *Applier) endSession(id, reason string) Result {
	se := a.st.sessions[id]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	channels := sortedKeys(se.channels)
	for _, name := range channels {
		a.removeMember(a.st.channels[name], id)
	}
	if a.st.nicks[Fold(se.Nick)] == id {
		delete(a.st.nicks, Fold(se.Nick))
	}
	if se.TokenHash != "" {
		delete(a.st.tokens, se.TokenHash)
	}
	delete(a.st.sessions, id)
	a.st.noteNick(false, se.Nick, se.DID, id)
	a.sessionEnded(se.Ref(), channels)
	a.emit(Event{Kind: EvQuit, Actor: se.Ref(), Channels: channels, Text: reason})
	return Result{Code: OK}
}

func (a *Applier) purgeNode(c PurgeNode) Result {
	if c.Node == "" {
		return Result{Code: ErrInvalid}
	}
	var ids []string
	for id, se := range a.st.sessions {
		if se.Node == c.Node && (c.Keep == "" || se.Incarnation != c.Keep) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		a.endSession(id, c.Reason)
	}
	return Result{Code: OK, Count: len(ids)}
}

func (a *Applier) away(c Away) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if se.Away == c.Text {
		return Result{Code: NoChange}
	}
	se.Away = c.Text
	a.emit(Event{Kind: EvAway, Actor: se.Ref(), Text: c.Text, Channels: sortedKeys(se.channels)})
	return Result{Code: OK}
}

func (a *Applier) oper(c Oper) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if se.Oper {
		return Result{Code: NoChange}
	}
	se.Oper = true
	a.emit(Event{Kind: EvOper, Actor: se.Ref()})
	return Result{Code: OK}
}

func (a *Applier) setFavorites(c SetFavorites) Result {
	if c.DID == "" || len(c.Favorites) > MaxFavorites {
		return Result{Code: ErrInvalid}
	}
	for _, name := range c.Favorites {
		if !validChannelName(name) {
			return Result{Code: ErrInvalid}
		}
	}
	if len(c.Favorites) == 0 {
		delete(a.st.favorites, c.DID)
		return Result{Code: OK, List: []string{}}
	}
	list := append([]string(nil), c.Favorites...)
	a.st.favorites[c.DID] = list
	return Result{Code: OK, List: list}
}

func (a *Applier) registerKey(c RegisterKey) Result {
	if c.DID == "" || c.KID == "" || len(c.PublicKey) != 32 || c.Source == "" {
		return Result{Code: ErrInvalid}
	}
	now := a.env.Time / 1000
	var se *Session
	if c.Session != "" {
		if se = a.st.sessions[c.Session]; se == nil || se.DID != c.DID {
			return Result{Code: ErrNoSuchSession}
		}
	}
	if k := a.st.key(c.DID, c.KID); k != nil {
		if string(k.PublicKey) != string(c.PublicKey) {
			return Result{Code: ErrInvalid}
		}
		if k.RemovedAt != 0 {
			return Result{Code: ErrKeyEnded}
		}
		if k.ExpiresAt != 0 && k.ExpiresAt <= now {
			return Result{Code: ErrKeyEnded}
		}
		if now > k.LastSeenAt {
			k.LastSeenAt = now
		}
		if se != nil {
			se.SigningKID = c.KID
		}
		return Result{Code: NoChange}
	}
	if c.ExpiresAt != 0 && c.ExpiresAt <= now {
		return Result{Code: ErrKeyEnded}
	}
	if c.Source == "local-session" && !a.makeRoomForSessionKey(c.DID) {
		return Result{Code: ErrTooManyKeys}
	}
	byKID := a.st.keys[c.DID]
	if byKID == nil {
		byKID = map[string]*KeyRecord{}
		a.st.keys[c.DID] = byKID
	}
	byKID[c.KID] = &KeyRecord{KID: c.KID, PublicKey: append([]byte(nil), c.PublicKey...), Source: c.Source,
		Purpose: c.Purpose, RegisteredAt: now, LastSeenAt: now, ExpiresAt: c.ExpiresAt}
	if se != nil {
		se.SigningKID = c.KID
	}
	return Result{Code: OK}
}

func (a *Applier) retireKey(c RetireKey) Result {
	k := a.st.key(c.DID, c.KID)
	if k == nil || k.RemovedAt != 0 {
		return Result{Code: NoChange}
	}
	k.RemovedAt = a.env.Time / 1000
	return Result{Code: OK}
}

// EvRegister is the event of a session that registered (Actor), on whichever node (MONITOR).
// Event kinds are not persisted; this one keeps its number away from the list in result.go.
const EvRegister EventKind = 40
