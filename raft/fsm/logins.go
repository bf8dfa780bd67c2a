package fsm

import (
	"bytes"
	"maps"
	"slices"
	"strings"
)

// Logins for ordinary IRC clients: a DID's client passwords and the deployment-hosted accounts
// of people without a DID of their own.
//
// A client password is kept only as a SCRAM-SHA-256 verifier (RFC 5802: StoredKey and ServerKey,
// never the password): one salt and iteration count per DID, shared by all its passwords, so
// that one SCRAM exchange (which announces one salt) can be checked against each of them. The
// proposer draws the password and, for a DID's first password, the salt; it sends the DID's
// current salt with every later password, and Apply refuses one whose salt is not the DID's.
//
// A hosted account is a name (an IRC nick that is also a did:web path segment) bound to the DID
// did:web:<server name>:u:<folded name>; registering it stores its password as above, under the
// name AccountPasswordName, and makes the DID own the nick.

// Command types of this file.
const (
	TypeSetClientPassword    CommandType = 84
	TypeRevokeClientPassword CommandType = 85
	TypeRegisterAccount      CommandType = 86
)

// Result codes of this file.
const (
	ErrPasswordExists   Code = 80 // a client password of that name exists
	ErrNoSuchPassword   Code = 81 // no client password of that name
	ErrTooManyPasswords Code = 82 // the DID holds MaxClientPasswords already
	ErrAccountExists    Code = 83 // the account name is registered, owned by another DID or in use
	ErrSaltMismatch     Code = 84 // the verifier was made with a salt that is not the DID's (retry)
	ErrTooManyAccounts  Code = 85 // the deployment holds MaxHostedAccounts
)

func init() {
	registerCommands(map[CommandType]CommandSpec{
		TypeSetClientPassword:    spec("set-client-password", (*Applier).setClientPassword),
		TypeRevokeClientPassword: spec("revoke-client-password", (*Applier).revokeClientPassword),
		TypeRegisterAccount:      spec("register-account", (*Applier).registerAccount),
	})
	nameCode(ErrPasswordExists, "password-exists")
	nameCode(ErrNoSuchPassword, "no-such-password")
	nameCode(ErrTooManyPasswords, "too-many-passwords")
	nameCode(ErrAccountExists, "account-exists")
	nameCode(ErrSaltMismatch, "salt-mismatch")
	nameCode(ErrTooManyAccounts, "too-many-accounts")
}

// Limits of logins, enforced in Apply.
const (
	MaxClientPasswords     = 16      // per DID
	MaxPasswordNameLen     = 32      // a client password's name: [A-Za-z0-9._-]
	MaxAccountNameLen      = 32      // a hosted account's name (see ValidAccountName)
	MaxHostedAccounts      = 100_000 // per deployment
	MinSCRAMIterations     = 4096    // RFC 7677's minimum
	MaxSCRAMIterations     = 1 << 20
	SCRAMSaltLen           = 16
	SCRAMKeyLen            = 32 // SHA-256
	AccountPasswordName    = "account"
	hostedAccountDIDMarker = ":u:"
)

// Logins is the replicated login state (a section of the snapshot, nil until the first password).
type Logins struct {
	DIDs     map[string]*DIDLogins     `json:"dids,omitempty"`     // DID → its client passwords
	Accounts map[string]*HostedAccount `json:"accounts,omitempty"` // folded account name → account
}

// DIDLogins is one DID's client passwords: the shared SCRAM salt and iteration count, and the
// verifier of each password by name.
type DIDLogins struct {
	Salt       []byte                     `json:"salt"`
	Iterations int                        `json:"iterations"`
	Passwords  map[string]*ClientPassword `json:"passwords"`
}

// ClientPassword is the SCRAM-SHA-256 verifier of one client password.
type ClientPassword struct {
	StoredKey []byte `json:"stored_key"`
	ServerKey []byte `json:"server_key"`
	CreatedAt int64  `json:"created_at"` // unix ms, the proposer's time
}

// HostedAccount is an account registered on this deployment (draft/account-registration).
type HostedAccount struct {
	Name      string `json:"name"` // as registered
	DID       string `json:"did"`
	CreatedAt int64  `json:"created_at"` // unix ms
}

// SetClientPassword adds a named client password (its verifier) to a DID.
type SetClientPassword struct {
	DID        string `json:"did"`
	Name       string `json:"name"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// RevokeClientPassword removes a DID's client password by name.
type RevokeClientPassword struct {
	DID  string `json:"did"`
	Name string `json:"name"`
}

// RegisterAccount registers a hosted account: Name (as typed), DID (the account's did:web, whose
// last path segment is the folded name) and the verifier of its password.
type RegisterAccount struct {
	Name       string `json:"name"`
	DID        string `json:"did"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	// Session is the registering session, whose own use of the nick is no land grab.
	Session string `json:"session,omitempty"`
}

func (SetClientPassword) CommandType() CommandType    { return TypeSetClientPassword }
func (RevokeClientPassword) CommandType() CommandType { return TypeRevokeClientPassword }
func (RegisterAccount) CommandType() CommandType      { return TypeRegisterAccount }

// ValidPasswordName reports whether name may name a client password.
func ValidPasswordName(name string) bool {
	return name != "" && len(name) <= MaxPasswordNameLen && strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) < 0
}

// ValidAccountName reports whether name may name a hosted account: 1 to MaxAccountNameLen of
// ASCII letters, digits, '_' and '-', starting with a letter (a nick and a did:web segment).
func ValidAccountName(name string) bool {
	if name == "" || len(name) > MaxAccountNameLen {
		return false
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0
}

// HostedAccountDID is the DID of the hosted account name on the deployment serverName.
func HostedAccountDID(serverName, name string) string {
	return "did:web:" + strings.ReplaceAll(serverName, ":", "%3A") + hostedAccountDIDMarker + Fold(name)
}

func validVerifier(salt []byte, iterations int, stored, server []byte) bool {
	return len(salt) >= SCRAMSaltLen && len(salt) <= 64 && iterations >= MinSCRAMIterations &&
		iterations <= MaxSCRAMIterations && len(stored) == SCRAMKeyLen && len(server) == SCRAMKeyLen
}

func (s *State) loginsOf() *Logins {
	if s.logins == nil {
		s.logins = &Logins{}
	}
	if s.logins.DIDs == nil {
		s.logins.DIDs = map[string]*DIDLogins{}
	}
	return s.logins
}

// addPassword files a verifier under did, checking the name, the cap and the DID's salt.
func (a *Applier) addPassword(did, name string, salt []byte, iterations int, stored, server []byte) Result {
	if did == "" || !ValidPasswordName(name) || !validVerifier(salt, iterations, stored, server) {
		return Result{Code: ErrInvalid}
	}
	l := a.st.loginsOf()
	d := l.DIDs[did]
	if d != nil && len(d.Passwords) > 0 {
		if !bytes.Equal(d.Salt, salt) || d.Iterations != iterations {
			return Result{Code: ErrSaltMismatch}
		}
		if d.Passwords[name] != nil {
			return Result{Code: ErrPasswordExists}
		}
		if len(d.Passwords) >= MaxClientPasswords {
			return Result{Code: ErrTooManyPasswords}
		}
	} else {
		d = &DIDLogins{Salt: slices.Clone(salt), Iterations: iterations, Passwords: map[string]*ClientPassword{}}
		l.DIDs[did] = d
	}
	d.Passwords[name] = &ClientPassword{StoredKey: slices.Clone(stored), ServerKey: slices.Clone(server), CreatedAt: a.env.Time}
	return Result{Code: OK}
}

func (a *Applier) setClientPassword(c SetClientPassword) Result {
	return a.addPassword(c.DID, c.Name, c.Salt, c.Iterations, c.StoredKey, c.ServerKey)
}

func (a *Applier) revokeClientPassword(c RevokeClientPassword) Result {
	if c.DID == "" || c.Name == "" {
		return Result{Code: ErrInvalid}
	}
	var d *DIDLogins
	if a.st.logins != nil {
		d = a.st.logins.DIDs[c.DID]
	}
	if d == nil || d.Passwords[c.Name] == nil {
		return Result{Code: ErrNoSuchPassword}
	}
	delete(d.Passwords, c.Name)
	if len(d.Passwords) == 0 {
		delete(a.st.logins.DIDs, c.DID)
	}
	return Result{Code: OK}
}

func (a *Applier) registerAccount(c RegisterAccount) Result {
	folded := Fold(c.Name)
	if !ValidAccountName(c.Name) || !strings.HasPrefix(c.DID, "did:web:") ||
		!strings.HasSuffix(c.DID, hostedAccountDIDMarker+folded) {
		return Result{Code: ErrInvalid}
	}
	if !validVerifier(c.Salt, c.Iterations, c.StoredKey, c.ServerKey) {
		return Result{Code: ErrInvalid}
	}
	l := a.st.loginsOf()
	if l.Accounts[folded] != nil || l.DIDs[c.DID] != nil {
		return Result{Code: ErrAccountExists}
	}
	if owner := a.st.nickOwners[folded]; owner != "" && owner != c.DID {
		return Result{Code: ErrAccountExists, Owner: owner}
	}
	if holder, ok := a.st.nicks[folded]; ok && holder != c.Session {
		return Result{Code: ErrAccountExists}
	}
	if len(l.Accounts) >= MaxHostedAccounts {
		return Result{Code: ErrTooManyAccounts}
	}
	if res := a.addPassword(c.DID, AccountPasswordName, c.Salt, c.Iterations, c.StoredKey, c.ServerKey); res.Code != OK {
		return res
	}
	if l.Accounts == nil {
		l.Accounts = map[string]*HostedAccount{}
	}
	l.Accounts[folded] = &HostedAccount{Name: c.Name, DID: c.DID, CreatedAt: a.env.Time}
	a.claimNick(folded, c.DID)
	return Result{Code: OK}
}

// PasswordInfo describes one client password without its verifier.
type PasswordInfo struct {
	Name      string
	CreatedAt int64 // unix ms
}

// LoginsView reads client passwords and hosted accounts: copies, never references into the
// state. Get it with LoginsOf inside Machine.Read.
type LoginsView struct {
	s *State
	l *Logins
}

// LoginsOf is the logins view of st.
func LoginsOf(st *State) LoginsView { return LoginsView{st, st.logins} }

// Passwords lists did's client passwords, sorted by name.
func (v LoginsView) Passwords(did string) []PasswordInfo {
	if v.l == nil || v.l.DIDs[did] == nil {
		return nil
	}
	d := v.l.DIDs[did]
	out := make([]PasswordInfo, 0, len(d.Passwords))
	for _, name := range slices.Sorted(maps.Keys(d.Passwords)) {
		out = append(out, PasswordInfo{Name: name, CreatedAt: d.Passwords[name].CreatedAt})
	}
	return out
}

// SCRAMVerifier is one client password's SCRAM-SHA-256 verifier (copied out of the state).
type SCRAMVerifier struct {
	Name      string
	StoredKey []byte
	ServerKey []byte
}

// SCRAMCredentials is what checks a password login: the DID, its salt and iteration count and
// the verifiers of every client password, sorted by name.
type SCRAMCredentials struct {
	DID        string
	Salt       []byte
	Iterations int
	Verifiers  []SCRAMVerifier
}

// Credentials resolves a login name to the credentials of its DID: a DID itself, a hosted
// account's name, or a nick a DID owns (names are folded here). ok is false when the name leads
// to no DID with a client password.
func (v LoginsView) Credentials(login string) (SCRAMCredentials, bool) {
	if v.l == nil || login == "" {
		return SCRAMCredentials{}, false
	}
	did := login
	if !strings.HasPrefix(login, "did:") {
		folded := Fold(login)
		if acct := v.l.Accounts[folded]; acct != nil {
			did = acct.DID
		} else {
			did = v.s.nickOwners[folded]
		}
	}
	d := v.l.DIDs[did]
	if d == nil || len(d.Passwords) == 0 {
		return SCRAMCredentials{}, false
	}
	out := SCRAMCredentials{DID: did, Salt: slices.Clone(d.Salt), Iterations: d.Iterations}
	for _, name := range slices.Sorted(maps.Keys(d.Passwords)) {
		p := d.Passwords[name]
		out.Verifiers = append(out.Verifiers, SCRAMVerifier{Name: name, StoredKey: slices.Clone(p.StoredKey), ServerKey: slices.Clone(p.ServerKey)})
	}
	return out, true
}

// Salt returns did's SCRAM salt and iteration count, or ok false when it has no client
// password yet (the proposer then draws a new salt).
func (v LoginsView) Salt(did string) (salt []byte, iterations int, ok bool) {
	if v.l == nil || v.l.DIDs[did] == nil {
		return nil, 0, false
	}
	d := v.l.DIDs[did]
	return slices.Clone(d.Salt), d.Iterations, true
}

// HostedAccount returns the hosted account registered under name (any case).
func (v LoginsView) HostedAccount(name string) (HostedAccount, bool) {
	if v.l == nil {
		return HostedAccount{}, false
	}
	a := v.l.Accounts[Fold(name)]
	if a == nil {
		return HostedAccount{}, false
	}
	return *a, true
}
