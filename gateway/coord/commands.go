package coord

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// Caller is the IRC session that sent an agent command.
type Caller struct {
	Session string
	DID     string // "" for a guest
	Nick    string
}

// Actor classes AGENT REGISTER accepts.
var actorClasses = map[string]bool{"agent": true, "external_agent": true, "human": true}

// Presence states PRESENCE and HEARTBEAT accept.
var presenceStates = map[string]bool{
	"active": true, "idle": true, "busy": true, "executing": true, "waiting": true, "paused": true,
	"degraded": true, "offline": true, "online": true, "away": true, "thinking": true, "blocked": true,
}

// maxKVPairs bounds a key=value;... parameter.
const maxKVPairs = 16

// ParseKV reads a "key=value;key=value" parameter. Keys are lowercased; a pair without '=' is
// an error.
func ParseKV(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	parts := strings.Split(s, ";")
	if len(parts) > maxKVPairs {
		return nil, errors.New("too many key=value pairs")
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" || len(k) > 32 || len(v) > 512 {
			return nil, errors.New("expected key=value pairs separated by ';'")
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

func needAccount(cmd string, c Caller) *Fail {
	if c.DID == "" {
		return fail(cmd, "ACCOUNT_REQUIRED", "Authenticate with SASL first")
	}
	return nil
}

// Provenance handles PROVENANCE :<base64url JSON>: a FreeqBotDelegation/v1 certificate is
// verified and its creator recorded as the actor's principal; another declaration is kept
// unverified. It returns the line of text to NOTICE back.
func (s *Service) Provenance(ctx context.Context, c Caller, param string) (string, *Fail) {
	if f := needAccount("PROVENANCE", c); f != nil {
		return "", f
	}
	doc, raw, err := DecodeProvenance(param)
	if err != nil {
		return "", fail("PROVENANCE", "INVALID_PROVENANCE", err.Error())
	}
	d, err := VerifyDelegation(doc, raw, c.DID, s.creatorKeys)
	if err != nil {
		return "", fail("PROVENANCE", "DID_MISMATCH", err.Error())
	}
	res, err := s.propose(ctx, fsmcoord.SetProvenance{DID: c.DID, Verified: d.Verified, Principal: d.Principal, Reason: d.Reason,
		Certificate: string(raw), Expires: d.Expires})
	if err != nil {
		return "", tempFail("PROVENANCE")
	}
	if f := resultFail("PROVENANCE", res); f != nil {
		return "", f
	}
	if d.Verified {
		return "Provenance verified: " + d.Reason, nil
	}
	return "Provenance stored (unverified): " + d.Reason, nil
}

// creatorKeys lists the keys a creator DID filed here.
func (s *Service) creatorKeys(did string) []CreatorKey {
	var out []CreatorKey
	s.read(func(st *fsm.State) {
		for _, k := range st.SigningKeysOf(did) {
			out = append(out, CreatorKey{PublicKey: ed25519.PublicKey(k.PublicKey), RemovedAt: k.RemovedAt, ExpiresAt: k.ExpiresAt})
		}
	})
	return out
}

// Agent handles AGENT REGISTER :class=<class>, AGENT MANIFEST :<base64url manifest> and
// AGENT SPAWN <nick> <channel> [:capabilities=a,b;ttl=<s>;task=<ref>] and AGENT DESPAWN <nick>.
func (s *Service) Agent(ctx context.Context, c Caller, params []string) (string, *Fail) {
	if len(params) == 0 {
		return "", fail("AGENT", "INVALID_PARAMS", "AGENT REGISTER|MANIFEST|SPAWN|DESPAWN ...")
	}
	if f := needAccount("AGENT", c); f != nil {
		return "", f
	}
	sub, args := strings.ToUpper(params[0]), params[1:]
	switch sub {
	case "REGISTER":
		kv, err := ParseKV(strings.Join(args, " "))
		class := kv["class"]
		if err != nil || !actorClasses[class] {
			return "", fail("AGENT", "INVALID_PARAMS", "AGENT REGISTER :class=agent|external_agent|human")
		}
		return s.proposeOK(ctx, "AGENT", fsmcoord.SetActorClass{DID: c.DID, Class: class, Session: c.Session}, "Registered as "+class)
	case "MANIFEST":
		if len(args) != 1 {
			return "", fail("AGENT", "INVALID_PARAMS", "AGENT MANIFEST :<base64url of a TOML or JSON manifest>")
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(args[0], "="))
		if err != nil {
			return "", fail("AGENT", "INVALID_MANIFEST", "The manifest is not base64url")
		}
		return s.PublishManifest(ctx, c.DID, raw)
	case "SPAWN":
		return s.spawn(ctx, c, args)
	case "DESPAWN":
		if len(args) != 1 || args[0] == "" || len(args[0]) > fsm.MaxNickLen {
			return "", fail("AGENT", "INVALID_PARAMS", "AGENT DESPAWN <nick>")
		}
		child := s.ChildDID(c.DID, args[0])
		return s.proposeOK(ctx, "AGENT", fsmcoord.Despawn{ParentDID: c.DID, ChildDID: child}, "Despawned "+args[0])
	}
	return "", fail("AGENT", "UNKNOWN_SUBCOMMAND", "AGENT REGISTER|MANIFEST|SPAWN|DESPAWN")
}

// PublishManifest validates a manifest and files it as did's.
func (s *Service) PublishManifest(ctx context.Context, did string, raw []byte) (string, *Fail) {
	m, canonical, err := ParseManifest(raw, s.cfg.Options.MaxManifestBytes)
	if err != nil {
		return "", fail("AGENT", "INVALID_MANIFEST", err.Error())
	}
	return s.proposeOK(ctx, "AGENT", fsmcoord.RegisterManifest{DID: did, Manifest: string(canonical), Class: m.Agent.ActorClass},
		"Manifest published for "+m.Agent.DisplayName)
}

func (s *Service) spawn(ctx context.Context, c Caller, args []string) (string, *Fail) {
	if len(args) < 2 {
		return "", fail("AGENT", "INVALID_PARAMS", "AGENT SPAWN <nick> <channel> [:capabilities=a,b;ttl=<seconds>;task=<ref>]")
	}
	nick, channel := args[0], fsm.Fold(args[1])
	kv, err := ParseKV(strings.Join(args[2:], " "))
	if err != nil || nick == "" || len(nick) > fsm.MaxNickLen || strings.ContainsAny(nick, " ,:*?!@#&") {
		return "", fail("AGENT", "INVALID_PARAMS", "AGENT SPAWN <nick> <channel> [:capabilities=a,b;ttl=<seconds>;task=<ref>]")
	}
	member := false
	s.read(func(st *fsm.State) { member = st.IsChannelMemberDID(channel, c.DID) })
	if !member {
		return "", fail("AGENT", "NOT_ON_CHANNEL", "You spawn agents only into channels you are in")
	}
	caps := []string{}
	if v := kv["capabilities"]; v != "" {
		caps = strings.Split(v, ",")
	}
	if err := checkCapabilities("capabilities", caps); err != nil {
		return "", fail("AGENT", "INVALID_PARAMS", err.Error())
	}
	var ttl int64
	if v := kv["ttl"]; v != "" {
		if ttl, err = strconv.ParseInt(v, 10, 64); err != nil || ttl < 0 || ttl > fsmcoord.MaxHeartbeatTTL*30 {
			return "", fail("AGENT", "INVALID_PARAMS", "ttl is a number of seconds")
		}
	}
	child := s.ChildDID(c.DID, nick)
	return s.proposeOK(ctx, "AGENT", fsmcoord.RecordSpawn{Agent: fsmcoord.SpawnedAgent{ChildDID: child, ParentDID: c.DID, ParentNick: c.Nick,
		Nick: nick, Channel: channel, Capabilities: caps, TTL: ttl, TaskRef: kv["task"]}}, "Spawned "+nick+" as "+child)
}

// ChildDID is the DID of the agent parent spawns as nick: did:web:<server>:agents:<scope>:<nick>,
// where scope (16 hex digits of SHA-256 of the parent's DID) keeps each parent's names its own.
func (s *Service) ChildDID(parent, nick string) string {
	sum := sha256.Sum256([]byte(parent))
	return s.cfg.ServerDID + ":agents:" + hex.EncodeToString(sum[:8]) + ":" + strings.ToLower(nick)
}

// Presence handles PRESENCE :state=<state>[;status=<text>].
func (s *Service) Presence(ctx context.Context, c Caller, param string) (string, *Fail) {
	if f := needAccount("PRESENCE", c); f != nil {
		return "", f
	}
	kv, err := ParseKV(param)
	if err != nil || !presenceStates[kv["state"]] || len(kv["status"]) > 256 {
		return "", fail("PRESENCE", "INVALID_PARAMS", "PRESENCE :state=<active|idle|busy|executing|waiting|paused|degraded|offline>[;status=<text>]")
	}
	return s.proposeOK(ctx, "PRESENCE", fsmcoord.SetPresence{DID: c.DID, State: kv["state"], Status: kv["status"]}, "")
}

// Heartbeat handles HEARTBEAT [:state=<state>;ttl=<seconds>] (or HEARTBEAT <seconds>).
func (s *Service) Heartbeat(ctx context.Context, c Caller, param string) (string, *Fail) {
	if f := needAccount("HEARTBEAT", c); f != nil {
		return "", f
	}
	kv := map[string]string{}
	if n, err := strconv.ParseInt(strings.TrimSpace(param), 10, 64); err == nil {
		kv["ttl"] = strconv.FormatInt(n, 10)
	} else if kv, err = ParseKV(param); err != nil {
		return "", fail("HEARTBEAT", "INVALID_PARAMS", "HEARTBEAT :state=<state>;ttl=<seconds>")
	}
	ttl := int64(s.cfg.Options.DefaultHeartbeatTTL)
	if v, ok := kv["ttl"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > fsmcoord.MaxHeartbeatTTL {
			return "", fail("HEARTBEAT", "INVALID_PARAMS", "ttl is 1 to 86400 seconds")
		}
		ttl = n
	}
	if st := kv["state"]; st != "" && !presenceStates[st] {
		return "", fail("HEARTBEAT", "INVALID_PARAMS", "Unknown state")
	}
	return s.proposeOK(ctx, "HEARTBEAT", fsmcoord.Heartbeat{DID: c.DID, State: kv["state"], TTL: ttl}, "")
}

// proposeOK proposes cmd and answers ok (the text to NOTICE back, possibly empty) or the refusal.
func (s *Service) proposeOK(ctx context.Context, verb string, cmd fsm.Command, ok string) (string, *Fail) {
	res, err := s.propose(ctx, cmd)
	if err != nil {
		return "", tempFail(verb)
	}
	if f := resultFail(verb, res); f != nil {
		return "", f
	}
	return ok, nil
}

// ActorClass is the class a DID registered (AGENT REGISTER, a manifest, a spawn), "" when none.
func (s *Service) ActorClass(did string) string {
	if did == "" {
		return ""
	}
	class := ""
	s.read(func(st *fsm.State) {
		if r, ok := fsmcoord.Of(st).Actor(did); ok {
			class = r.Class
		}
	})
	return class
}
