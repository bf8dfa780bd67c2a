package discovery

import (
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// accountDocument serves GET /u/{name}/did.json: the DID document of a hosted account
// (did:web:<server name>:u:<name>, registered with IRC REGISTER), built from the replicated state
// so that every node serves the same one. It lists the account's live session keys (registered
// with MSGSIG) as assertion methods; the deployment holds no private key of the account, and its
// messages signed by no session key carry the server's signature (the contract's fallback).
func (s *Service) accountDocument(c *gin.Context) {
	name, now := c.Param("name"), time.Now().Unix()
	var (
		acct fsm.HostedAccount
		ok   bool
		keys []*fsm.KeyRecord
	)
	s.cfg.Accounts.Read(func(st *fsm.State) {
		if acct, ok = fsm.LoginsOf(st).HostedAccount(name); ok {
			for _, k := range st.KeysOf(acct.DID) {
				if k.EndedAt() == 0 || k.EndedAt() > now {
					kc := k.Record()
					keys = append(keys, &kc)
				}
			}
		}
	})
	if !ok || fsm.Fold(name) != name {
		rest.WriteError(c, http.StatusNotFound, "No account of that name is hosted here (names are lower case)")
		return
	}
	did := acct.DID
	methods := make([]gin.H, 0, len(keys))
	assertions := make([]string, 0, len(keys))
	for _, k := range keys {
		mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: ed25519.PublicKey(k.PublicKey)})
		if err != nil {
			continue
		}
		vm := did + "#" + k.KID
		methods = append(methods, gin.H{"id": vm, "type": "Multikey", "controller": did, "publicKeyMultibase": mb})
		assertions = append(assertions, vm)
	}
	base := strings.TrimRight(s.cfg.BaseURL, "/")
	c.JSON(http.StatusOK, gin.H{
		"@context":           []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
		"id":                 did,
		"alsoKnownAs":        []string{"irc://" + s.cfg.ServerName + "/" + url.PathEscape(acct.Name) + ",isuser"},
		"verificationMethod": methods,
		"assertionMethod":    assertions,
		"service": []gin.H{{
			"id": "#freeq_keys", "type": "FreeqSigningKeys",
			"serviceEndpoint": base + "/api/v1/signing-keys/" + url.PathEscape(did),
		}},
	})
}

// loginRows are the limit rows of password logins and hosted accounts.
func loginRows(r Registration) []limitRow {
	rows := []limitRow{
		{"SASL PLAIN / SCRAM-SHA-256", fmt.Sprintf("3 failed logins per connection, then `ERROR` and the connection closes; AUTHENTICATE lines 12 at once, then one per second; %d client passwords per DID", fsm.MaxClientPasswords)},
	}
	if !r.Enabled {
		return append(rows, limitRow{"hosted accounts (REGISTER)", "registration is off on this deployment"})
	}
	return append(rows, limitRow{"hosted accounts (REGISTER)", fmt.Sprintf("%d per client address (IPv6 per /64) per hour on each node; %d in all", r.PerAddressPerHour, fsm.MaxHostedAccounts)})
}
