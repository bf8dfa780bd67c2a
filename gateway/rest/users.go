package rest

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// resolveTimeout bounds a DID resolution made while answering a request.
const resolveTimeout = 5 * time.Second

// User is GET /api/v1/users/{nick}: a nick in use now, or owned by a DID.
type User struct {
	Nick   string  `json:"nick"`
	Online bool    `json:"online"`
	DID    *string `json:"did"`
	Handle *string `json:"handle"`
}

// Whois is GET /api/v1/users/{nick}/whois: the User plus the channels of
// an online user that the caller may read, and the session's details
// (null when offline).
type Whois struct {
	User
	Channels []string `json:"channels"`
	Username *string  `json:"user"`
	Host     *string  `json:"host"`
	Realname *string  `json:"realname"`
	Away     *string  `json:"away"`
}

// Actor is GET /api/v1/actors/{did}: what this server knows of a DID
// (its sessions, its nick, its channels the caller may read) and what its
// DID document says (handle, PDS, verification keys).
type Actor struct {
	DID    string `json:"did"`
	Online bool   `json:"online"`
	// Nick is the nick the DID owns, else its first online session's.
	Nick *string `json:"nick"`
	// Nicks are the nicks of its online sessions.
	Nicks    []string `json:"nicks"`
	Channels []string `json:"channels"`
	// Resolved reports whether the DID document could be resolved; handle,
	// pds and verification_keys come from it.
	Resolved         bool              `json:"resolved"`
	Handle           *string           `json:"handle"`
	PDS              *string           `json:"pds"`
	VerificationKeys []VerificationKey `json:"verification_keys"`
}

// VerificationKey is a key that may prove control of a DID.
type VerificationKey struct {
	ID                 string `json:"id"`
	Algorithm          string `json:"algorithm"`
	PublicKeyMultibase string `json:"public_key_multibase"`
}

// userState is what the user routes copy out of the replicated state.
type userState struct {
	found    bool
	user     User
	channels []string
	session  *fsm.Session // a copy
}

// lookupUser finds a nick: the session using it now, else its owner.
func (s *Server) lookupUser(nick, readerDID string) userState {
	var u userState
	s.cfg.State.Read(func(st *fsm.State) {
		if se, ok := st.SessionByNick(nick); ok {
			u.found, u.session = true, &se
			u.user = User{Nick: se.Nick, Online: true, DID: nullable(se.DID)}
			u.channels = visibleChannels(st, []fsm.Session{se}, readerDID)
			return
		}
		folded := fsm.Fold(nick)
		if did := st.NickOwner(folded); did != "" {
			u.found = true
			u.user = User{Nick: folded, DID: nullable(did)}
		}
	})
	return u
}

// visibleChannels lists the channels of sessions that the reader may read,
// sorted and without duplicates. The caller holds the state's read lock.
func visibleChannels(st *fsm.State, sessions []fsm.Session, readerDID string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, se := range sessions {
		for name := range se.Channels() {
			ch, ok := st.Channel(name)
			if !ok || seen[name] || !st.MayRead(ch, readerDID) {
				continue
			}
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// handleOf is the handle a DID's document claims, or nil.
func (s *Server) handleOf(ctx context.Context, did *string) *string {
	if did == nil {
		return nil
	}
	doc, err := s.resolve(ctx, *did)
	if err != nil {
		return nil
	}
	return nullable(doc.Handle())
}

// resolve resolves a DID within resolveTimeout.
func (s *Server) resolve(ctx context.Context, did string) (*keyresolver.Document, error) {
	if s.cfg.Resolver == nil {
		return nil, keyresolver.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	return s.cfg.Resolver.Resolve(ctx, did)
}

func (s *Server) userFromPath(c *gin.Context) (userState, bool) {
	nick, err := parseNick(c.Param("nick"))
	if err != nil {
		WriteError(c, http.StatusBadRequest, "Bad nick: "+err.Error())
		return userState{}, false
	}
	u := s.lookupUser(nick, DID(c))
	if !u.found {
		WriteError(c, http.StatusNotFound, "No user is using or owns the nick "+quoteParam(nick))
		return userState{}, false
	}
	u.user.Handle = s.handleOf(c.Request.Context(), u.user.DID)
	return u, true
}

// user serves GET /api/v1/users/{nick}.
func (s *Server) user(c *gin.Context) {
	if u, ok := s.userFromPath(c); ok {
		c.PureJSON(http.StatusOK, u.user)
	}
}

// whois serves GET /api/v1/users/{nick}/whois. Channels are those of an
// online user that the caller may read: public ones, plus restricted ones
// the bearer's DID may read.
func (s *Server) whois(c *gin.Context) {
	u, ok := s.userFromPath(c)
	if !ok {
		return
	}
	w := Whois{User: u.user, Channels: []string{}}
	if se := u.session; se != nil {
		w.Channels = u.channels
		w.Username, w.Host, w.Realname = &se.User, &se.Host, &se.Realname
		w.Away = nullable(se.Away)
	}
	c.PureJSON(http.StatusOK, w)
}

// actor serves GET /api/v1/actors/{did}. A DID that cannot be resolved and
// has neither a session nor a nick here is not found.
func (s *Server) actor(c *gin.Context) {
	did := c.Param("did")
	if _, err := keyresolver.ValidateDID(did); err != nil {
		WriteError(c, http.StatusBadRequest, "Bad DID "+quoteParam(did)+": "+err.Error())
		return
	}
	a := Actor{DID: did, Nicks: []string{}, Channels: []string{}, VerificationKeys: []VerificationKey{}}
	var owned string
	s.cfg.State.Read(func(st *fsm.State) {
		sessions := st.SessionsByDID(did)
		for _, se := range sessions {
			a.Nicks = append(a.Nicks, se.Nick)
		}
		a.Online = len(sessions) > 0
		a.Channels = visibleChannels(st, sessions, DID(c))
		owned = st.OwnedNick(did)
	})
	switch {
	case owned != "":
		a.Nick = nullable(owned)
	case len(a.Nicks) > 0:
		a.Nick = nullable(a.Nicks[0])
	}
	extra, known := s.moreActorDetails(did)
	doc, err := s.resolve(keyresolver.WithClient(c.Request.Context(), c.ClientIP()), did)
	if err != nil {
		if !a.Online && owned == "" && !known {
			WriteError(c, http.StatusNotFound, "The DID "+did+" cannot be resolved and is not known here")
			return
		}
	} else {
		a.Resolved = true
		a.Handle = nullable(doc.Handle())
		if pds, ok := doc.PDSEndpoint(); ok {
			a.PDS = nullable(pds)
		}
		for _, k := range doc.CandidateKeys() {
			mb, err := keyresolver.EncodeMultikey(k)
			if err != nil {
				continue
			}
			a.VerificationKeys = append(a.VerificationKeys, VerificationKey{ID: k.ID, Algorithm: k.Type.String(), PublicKeyMultibase: mb})
		}
	}
	writeActor(c, a, extra)
}
