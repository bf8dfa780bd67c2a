package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Client passwords over REST: the caller's DID mints, lists and revokes the passwords ordinary
// IRC clients log in with (SASL PLAIN and SCRAM-SHA-256). The IRC edge owns them (its
// MintPassword, ClientPasswords and RevokePassword); only their verifiers are replicated.

// maxPasswordBody bounds the POST body.
const maxPasswordBody = 4 << 10

// PasswordStore mints, lists and revokes a DID's client passwords. Its refusals implement
// HTTPStatus() int (the status to answer); any other error is a 503.
type PasswordStore interface {
	// MayMintPasswords reports whether the holder of token, a bearer of did, may mint.
	MayMintPasswords(token, did string) bool
	MintPassword(ctx context.Context, did, name string) (string, error)
	ClientPasswords(did string) []fsm.PasswordInfo
	RevokePassword(ctx context.Context, did, name string) error
}

// passwordJSON is one client password as listed (never its verifier).
type passwordJSON struct {
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
}

// mountPasswords mounts /api/v1/me/passwords (described in openapi.yaml).
func (s *Server) mountPasswords() {
	g := s.engine.Group("/api/v1/me/passwords", s.RequireBearer())
	g.POST("", s.createPassword)
	g.GET("", s.listPasswords)
	g.DELETE("/:name", s.deletePassword)
}

func (s *Server) passwordsAvailable(c *gin.Context) bool {
	if s.cfg.Passwords == nil {
		WriteError(c, http.StatusServiceUnavailable, "Client passwords are not available on this server")
		return false
	}
	return true
}

func (s *Server) createPassword(c *gin.Context) {
	if !s.passwordsAvailable(c) {
		return
	}
	var req struct {
		Name *string `json:"name"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, maxPasswordBody))
	err := dec.Decode(&req)
	if err == nil {
		if _, extra := dec.Token(); !errors.Is(extra, io.EOF) {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil || req.Name == nil {
		WriteError(c, http.StatusBadRequest, `The body must be JSON {"name": "<1 to 32 letters, digits, '.', '_' or '-'>"}`)
		return
	}
	token, _ := bearerToken(c.GetHeader("Authorization"))
	if !s.cfg.Passwords.MayMintPasswords(token, DID(c)) {
		WriteError(c, http.StatusForbidden, "This bearer token comes from a password login, which may not mint client passwords; log in with ATPROTO-CHALLENGE")
		return
	}
	password, err := s.cfg.Passwords.MintPassword(c.Request.Context(), DID(c), *req.Name)
	if err != nil {
		s.passwordError(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, gin.H{
		"name": *req.Name, "password": password, "did": DID(c), "mechanisms": []string{"PLAIN", "SCRAM-SHA-256"},
	})
}

func (s *Server) listPasswords(c *gin.Context) {
	if !s.passwordsAvailable(c) {
		return
	}
	list := s.cfg.Passwords.ClientPasswords(DID(c))
	out := make([]passwordJSON, 0, len(list))
	for _, p := range list {
		out = append(out, passwordJSON{Name: p.Name, CreatedAt: time.UnixMilli(p.CreatedAt).UTC().Format(time.RFC3339)})
	}
	c.PureJSON(http.StatusOK, gin.H{"passwords": out})
}

func (s *Server) deletePassword(c *gin.Context) {
	if !s.passwordsAvailable(c) {
		return
	}
	if err := s.cfg.Passwords.RevokePassword(c.Request.Context(), DID(c), c.Param("name")); err != nil {
		s.passwordError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) passwordError(c *gin.Context, err error) {
	var refusal interface{ HTTPStatus() int }
	if errors.As(err, &refusal) {
		WriteError(c, refusal.HTTPStatus(), err.Error())
		return
	}
	if errors.Is(err, fsm.ErrClusterUpgrading) {
		WriteError(c, http.StatusServiceUnavailable, "The server is being upgraded: client passwords can be changed once every node runs the new version")
		return
	}
	s.logger.WarnContext(c.Request.Context(), "client password change failed", "did", DID(c), "err", err)
	WriteError(c, http.StatusServiceUnavailable, "The client password could not be changed; try again")
}
