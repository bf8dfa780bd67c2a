package rest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

const (
	// maxFavorites is how many channels a favorites list keeps.
	maxFavorites = 200
	// maxFavoriteRunes is the longest channel name kept, in characters.
	maxFavoriteRunes = 64
	// maxFavoritesBody bounds the PUT body.
	maxFavoritesBody = 64 << 10
)

// favoritesBody is the JSON of GET and PUT /api/v1/favorites.
type favoritesBody struct {
	Favorites []string `json:"favorites"`
}

func (s *Server) getFavorites(c *gin.Context) {
	if s.cfg.Favorites == nil {
		WriteError(c, http.StatusServiceUnavailable, "Favorites are not available on this server")
		return
	}
	c.PureJSON(http.StatusOK, favoritesBody{Favorites: nonNil(s.cfg.Favorites.Favorites(DID(c)))})
}

func (s *Server) putFavorites(c *gin.Context) {
	if s.cfg.Favorites == nil {
		WriteError(c, http.StatusServiceUnavailable, "Favorites are not available on this server")
		return
	}
	raw, err := decodeFavorites(http.MaxBytesReader(c.Writer, c.Request.Body, maxFavoritesBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			WriteError(c, http.StatusRequestEntityTooLarge, "The favorites body is over 64 KiB")
			return
		}
		WriteError(c, http.StatusBadRequest, `The body must be JSON {"favorites": ["#channel", ...]}: `+err.Error())
		return
	}
	stored, err := s.cfg.Favorites.SetFavorites(c.Request.Context(), DID(c), normalizeFavorites(raw))
	if err != nil {
		s.logger.WarnContext(c.Request.Context(), "storing favorites failed", "did", DID(c), "err", err)
		WriteError(c, http.StatusServiceUnavailable, "The favorites could not be stored; try again")
		return
	}
	c.PureJSON(http.StatusOK, favoritesBody{Favorites: nonNil(stored)})
}

// decodeFavorites reads {"favorites": [...]} and returns the string
// elements; elements of other types are ignored, but the list itself must
// be present and an array, and nothing may follow the object.
func decodeFavorites(body io.Reader) ([]string, error) {
	var req struct {
		Favorites *[]json.RawMessage `json:"favorites"`
	}
	dec := json.NewDecoder(body)
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("unexpected data after the JSON object")
		}
		return nil, err
	}
	if req.Favorites == nil {
		return nil, errors.New(`missing "favorites" array`)
	}
	list := make([]string, 0, len(*req.Favorites))
	for _, elem := range *req.Favorites {
		var name string
		if json.Unmarshal(elem, &name) == nil {
			list = append(list, name)
		}
	}
	return list, nil
}

// normalizeFavorites keeps channel names (starting with # or &, at most 64
// characters, valid UTF-8, no spaces, commas or control characters),
// lowercased with the server's ASCII case mapping, without duplicates, in
// their given order, and at most 200 of them.
func normalizeFavorites(in []string) []string {
	out := make([]string, 0, min(len(in), maxFavorites))
	seen := make(map[string]bool, len(in))
	for _, name := range in {
		if !isChannelName(name) {
			continue
		}
		name = asciiLower(name)
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
		if len(out) == maxFavorites {
			break
		}
	}
	return out
}

func isChannelName(name string) bool {
	if name == "" || (name[0] != '#' && name[0] != '&') {
		return false
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxFavoriteRunes {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return r == ' ' || r == ',' || r < 0x20 || r == 0x7f
	})
}

// asciiLower lowercases A-Z only (IRC CASEMAPPING=ascii).
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
