package rest

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// protectedResourcePath is the RFC 9728 metadata document.
const protectedResourcePath = "/.well-known/oauth-protected-resource"

// RequireBearer admits only requests with a live bearer token (issued over
// IRC after SASL) and records its DID for DID. Others get 401 with
// WWW-Authenticate naming the protected-resource metadata.
func (s *Server) RequireBearer() gin.HandlerFunc {
	return func(c *gin.Context) {
		token, present := bearerToken(c.GetHeader("Authorization"))
		if !present {
			WriteError(c, http.StatusUnauthorized,
				"This endpoint needs Authorization: Bearer <token>; the token is sent as NOTICE API-BEARER after SASL ATPROTO-CHALLENGE on IRC")
			return
		}
		s.admitToken(c, token)
	}
}

// OptionalBearer records the DID of a request that carries a live bearer
// token and lets anonymous requests through; a token that is present but
// unknown or expired still gets 401, so a client learns its token died.
func (s *Server) OptionalBearer() gin.HandlerFunc {
	return func(c *gin.Context) {
		token, present := bearerToken(c.GetHeader("Authorization"))
		if !present {
			c.Next()
			return
		}
		s.admitToken(c, token)
	}
}

func (s *Server) admitToken(c *gin.Context, token string) {
	did, ok := "", false
	if s.cfg.Tokens != nil && token != "" {
		did, ok = s.cfg.Tokens.ResolveToken(token)
	}
	if !ok || did == "" {
		c.Header("WWW-Authenticate", s.wwwAuthenticate(c)+`, error="invalid_token"`)
		WriteError(c, http.StatusUnauthorized,
			"The bearer token is unknown or its IRC session has ended; authenticate again over IRC for a new one")
		return
	}
	c.Set(didKey, did)
	c.Next()
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header; present is false when there is no bearer credential at all.
func bearerToken(header string) (token string, present bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// BearerDID is the DID of the request's bearer token when it is live, else ""; unlike
// OptionalBearer it never refuses the request (for routes that only treat anonymous callers
// differently, such as the download limit of media).
func (s *Server) BearerDID(c *gin.Context) string {
	token, present := bearerToken(c.GetHeader("Authorization"))
	if !present || token == "" || s.cfg.Tokens == nil {
		return ""
	}
	did, _ := s.cfg.Tokens.ResolveToken(token)
	return did
}

// DID is the identity RequireBearer or OptionalBearer admitted, or "" for
// an anonymous request.
func DID(c *gin.Context) string {
	v, _ := c.Get(didKey)
	did, _ := v.(string)
	return did
}

// wwwAuthenticate is the challenge sent with every 401.
func (s *Server) wwwAuthenticate(c *gin.Context) string {
	return `Bearer resource_metadata="` + s.baseURL(c) + protectedResourcePath + `"`
}

// protectedResource is the RFC 9728 metadata document.
type protectedResource struct {
	Resource               string   `json:"resource"`
	ResourceName           string   `json:"resource_name"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceDocumentation  string   `json:"resource_documentation"`
	ResourcePolicyURI      string   `json:"resource_policy_uri"`
	ScopesSupported        []string `json:"scopes_supported"`
}

func (s *Server) protectedResourceMetadata(c *gin.Context) {
	base := s.baseURL(c)
	c.JSON(http.StatusOK, protectedResource{
		Resource:               base,
		ResourceName:           s.cfg.ServerName,
		AuthorizationServers:   []string{},
		BearerMethodsSupported: []string{"header"},
		ResourceDocumentation:  base + "/auth.md",
		ResourcePolicyURI:      base + "/tos",
		ScopesSupported:        []string{},
	})
}
