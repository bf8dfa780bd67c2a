package keyresolver

import "errors"

// Errors returned (wrapped) by this package; test for them with errors.Is.
var (
	// ErrUnsupportedMethod: the DID is syntactically valid but its method is
	// not did:key, did:web or did:plc.
	ErrUnsupportedMethod = errors.New("keyresolver: unsupported DID method")
	// ErrInvalidDID: the string is not a DID, or not a valid one for its method.
	ErrInvalidDID = errors.New("keyresolver: invalid DID")
	// ErrNotFound: the DID's host or directory answered that it has no such document.
	ErrNotFound = errors.New("keyresolver: DID document not found")
	// ErrBlockedAddress: the guarded HTTP client refused to connect to a
	// loopback, private or otherwise non-public address.
	ErrBlockedAddress = errors.New("keyresolver: address blocked by SSRF guard")
	// ErrDocumentMismatch: the fetched document's id is not the DID asked for.
	ErrDocumentMismatch = errors.New("keyresolver: DID document id does not match the DID")
	// ErrRateLimited: the client the resolution was made for (WithClient)
	// has made too many fresh resolutions lately.
	ErrRateLimited = errors.New("keyresolver: too many DID resolutions for this client")
	// ErrDocumentTooLarge: a list of the DID document is longer than
	// MaxVerificationMethods.
	ErrDocumentTooLarge = errors.New("keyresolver: DID document lists too many entries")
)
