package peering

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Trust is what a peer may originate: the exchange's trust levels (exchange.Trust), of which a
// configured server has full, relay or readonly.
type Trust = exchange.Trust

// Trust levels of a configured server.
const (
	TrustFull     = exchange.TrustFull     // messages, edits, deletes, reactions, linked-channel authority
	TrustRelay    = exchange.TrustRelay    // its own users' messages, edits, deletes and reactions; no state changes
	TrustReadonly = exchange.TrustReadonly // nothing: this server sends, never accepts
)

// ParseTrust reads a configured server's trust level.
func ParseTrust(s string) (Trust, error) { return exchange.ParseServerTrust(s) }

// Peer is a configured peer server.
type Peer struct {
	DID     string // did:web:<server name>
	BaseURL string // where its federation routes and did:web document are
	Trust   Trust
}

// Member is the peer as an entry of the exchange's allow-list.
func (p Peer) Member() exchange.Member {
	return exchange.Member{DID: p.DID, BaseURL: p.BaseURL, Trust: p.Trust}
}

// Name is the server name behind the peer's DID.
func (p Peer) Name() string { return ServerName(p.DID) }

// ServerName is the host name of a did:web server identity.
func ServerName(did string) string { return strings.TrimPrefix(did, "did:web:") }

// ParsePeer reads "did:web:other.example=https://other.example" (trust relay).
func ParsePeer(s string) (Peer, error) {
	did, base, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Peer{}, fmt.Errorf("peer %q: want did:web:<name>=<base URL>", s)
	}
	if err := validServerDID(did); err != nil {
		return Peer{}, fmt.Errorf("peer %q: %w", s, err)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return Peer{}, fmt.Errorf("peer %q: base URL must be http(s)://host[:port][/path]", s)
	}
	return Peer{DID: did, BaseURL: strings.TrimRight(base, "/"), Trust: TrustRelay}, nil
}

// ParsePeerTrust reads "did:web:other.example=full|relay|readonly".
func ParsePeerTrust(s string) (did string, t Trust, err error) {
	did, level, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return "", "", fmt.Errorf("peer trust %q: want did:web:<name>=full|relay|readonly", s)
	}
	if err := validServerDID(did); err != nil {
		return "", "", fmt.Errorf("peer trust %q: %w", s, err)
	}
	t, err = ParseTrust(level)
	return did, t, err
}

// Link is a channel linked with one peer.
type Link struct {
	Channel string // folded channel name, "#chan"
	Peer    string // the peer's DID
}

// ParseLink reads "#chan=did:web:other.example". The channel is case-folded as the replicated
// state folds channel names.
func ParseLink(s string) (Link, error) {
	ch, did, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || len(ch) < 2 || (ch[0] != '#' && ch[0] != '&') || strings.ContainsAny(ch, " ,\x07\r\n\x00") {
		return Link{}, fmt.Errorf("link %q: want #channel=did:web:<name>", s)
	}
	if err := validServerDID(did); err != nil {
		return Link{}, fmt.Errorf("link %q: %w", s, err)
	}
	return Link{Channel: fsm.Fold(ch), Peer: did}, nil
}

func validServerDID(did string) error {
	method, err := keyresolver.ValidateDID(did)
	if err != nil {
		return err
	}
	if method != "web" || strings.Contains(ServerName(did), ":") {
		return fmt.Errorf("%s: a server is did:web:<host name>", did)
	}
	return nil
}

// ApplyTrust sets trust levels on peers; a level for an unconfigured peer is an error.
func ApplyTrust(peers []Peer, levels map[string]Trust) error {
	for did, t := range levels {
		found := false
		for i := range peers {
			if peers[i].DID == did {
				peers[i].Trust, found = t, true
			}
		}
		if !found {
			return fmt.Errorf("--peer-trust for %s, which is not a configured --peer", did)
		}
	}
	return nil
}

// Home is the server authoritative for a linked channel's state: the DID that sorts lowest.
func Home(a, b string) string {
	if a < b {
		return a
	}
	return b
}
