package keyresolver

import (
	"fmt"
	"net/url"
	"strings"
)

// MaxDIDLength is the longest DID ValidateDID accepts.
const MaxDIDLength = 2048

// ValidateDID checks DID syntax as DID Core defines it:
//
//	did                = "did:" method-name ":" method-specific-id
//	method-name        = 1*( %x61-7A / DIGIT )
//	method-specific-id = *( *idchar ":" ) 1*idchar
//	idchar             = ALPHA / DIGIT / "." / "-" / "_" / pct-encoded
//
// and returns the method name. Errors wrap ErrInvalidDID.
func ValidateDID(did string) (method string, err error) {
	if len(did) > MaxDIDLength {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidDID, MaxDIDLength)
	}
	rest, ok := strings.CutPrefix(did, "did:")
	if !ok {
		return "", fmt.Errorf("%w: missing \"did:\" prefix", ErrInvalidDID)
	}
	method, id, ok := strings.Cut(rest, ":")
	if !ok {
		return "", fmt.Errorf("%w: missing method-specific id", ErrInvalidDID)
	}
	if method == "" {
		return "", fmt.Errorf("%w: empty method name", ErrInvalidDID)
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return "", fmt.Errorf("%w: method name must be lowercase letters and digits", ErrInvalidDID)
		}
	}
	if err := validateMethodSpecificID(id); err != nil {
		return "", err
	}
	return method, nil
}

func validateMethodSpecificID(id string) error {
	if id == "" || id[len(id)-1] == ':' {
		return fmt.Errorf("%w: method-specific id must end with an id character", ErrInvalidDID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case isIDChar(c), c == ':':
		case c == '%':
			if i+2 >= len(id) || !isHex(id[i+1]) || !isHex(id[i+2]) {
				return fmt.Errorf("%w: bad percent-encoding at byte %d", ErrInvalidDID, i)
			}
			i += 2
		default:
			return fmt.Errorf("%w: character %q not allowed in method-specific id", ErrInvalidDID, c)
		}
	}
	return nil
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// plcIDLength is the length of a did:plc identifier (base32 of a truncated hash).
const plcIDLength = 24

// validatePLC checks the did:plc form: "did:plc:" and 24 characters of
// lowercase base32 ([a-z2-7]). Checking this strictly keeps the DID safe to
// paste into the directory URL's path.
func validatePLC(did string) error {
	id, ok := strings.CutPrefix(did, "did:plc:")
	if !ok || len(id) != plcIDLength {
		return fmt.Errorf("%w: did:plc needs %d base32 characters", ErrInvalidDID, plcIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return fmt.Errorf("%w: did:plc id must be lowercase base32", ErrInvalidDID)
		}
	}
	return nil
}

// WebDocumentURL maps a did:web DID to the URL of its document:
// did:web:host → https://host/.well-known/did.json and
// did:web:host:a:b → https://host/a/b/did.json. The host part is
// percent-decoded (did:web:example.com%3A8443 names port 8443). The host must
// be a DNS name or IPv4 address with an optional port; path segments must be
// non-empty and may not be "." or "..".
func WebDocumentURL(did string) (string, error) {
	method, err := ValidateDID(did)
	if err != nil {
		return "", err
	}
	if method != "web" {
		return "", fmt.Errorf("%w: %q is not a did:web", ErrInvalidDID, did)
	}
	parts := strings.Split(strings.TrimPrefix(did, "did:web:"), ":")
	host, err := url.PathUnescape(parts[0])
	if err != nil {
		return "", fmt.Errorf("%w: did:web host: %v", ErrInvalidDID, err)
	}
	if err := validateWebHost(host); err != nil {
		return "", err
	}
	path := "/.well-known"
	if len(parts) > 1 {
		path = ""
		for _, seg := range parts[1:] {
			if seg == "" || seg == "." || seg == ".." {
				return "", fmt.Errorf("%w: did:web path segment %q", ErrInvalidDID, seg)
			}
			path += "/" + seg
		}
	}
	return "https://" + host + path + "/did.json", nil
}

// validateWebHost accepts "name" or "name:port" where name is made of
// letters, digits, '-' and '.', and port is 1–65535.
func validateWebHost(hostport string) error {
	name, port, hasPort := strings.Cut(hostport, ":")
	if name == "" || len(name) > 253 {
		return fmt.Errorf("%w: did:web host %q", ErrInvalidDID, hostport)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("%w: did:web host %q has character %q", ErrInvalidDID, hostport, c)
		}
	}
	if strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return fmt.Errorf("%w: did:web host %q has an empty label", ErrInvalidDID, hostport)
	}
	if hasPort {
		if port == "" || len(port) > 5 || port[0] == '0' {
			return fmt.Errorf("%w: did:web port %q", ErrInvalidDID, port)
		}
		n := 0
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return fmt.Errorf("%w: did:web port %q", ErrInvalidDID, port)
			}
			n = n*10 + int(port[i]-'0')
		}
		if n > 65535 {
			return fmt.Errorf("%w: did:web port %q out of range", ErrInvalidDID, port)
		}
	}
	return nil
}
