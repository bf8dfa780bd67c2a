package keyresolver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Document is the part of a DID document this service uses.
// Documents returned by a Resolver are copies: callers may modify them.
type Document struct {
	ID                 string               `json:"id"`
	AlsoKnownAs        []string             `json:"alsoKnownAs,omitempty"`
	VerificationMethod []VerificationMethod `json:"verificationMethod,omitempty"`
	// Authentication and AssertionMethod hold string references into
	// VerificationMethod (absolute or "#frag") or inline method objects.
	Authentication  []json.RawMessage `json:"authentication,omitempty"`
	AssertionMethod []json.RawMessage `json:"assertionMethod,omitempty"`
	Service         []Service         `json:"service,omitempty"`
	// parsed is the key of a document synthesized by DIDKeyDocument, already
	// parsed: CandidateKeys reuses it for a method whose publicKeyMultibase
	// is parsed.multibase instead of decoding that again.
	parsed *parsedKey
}

// parsedKey is a key with the multibase text it was parsed from.
type parsedKey struct {
	multibase string
	key       PublicKey
}

// VerificationMethod is one key entry. Only keys given as publicKeyMultibase
// are used; JWK keys are ignored.
type VerificationMethod struct {
	ID                 string `json:"id"`
	Type               string `json:"type"`
	Controller         string `json:"controller,omitempty"`
	PublicKeyMultibase string `json:"publicKeyMultibase,omitempty"`
}

// Service is one service entry. A serviceEndpoint that is not a string (DID
// Core also allows maps and sets) is ignored and leaves ServiceEndpoint empty.
type Service struct {
	ID              string `json:"id"`
	Type            string `json:"type"`
	ServiceEndpoint string `json:"serviceEndpoint"`
}

// UnmarshalJSON decodes a service entry, tolerating a non-string serviceEndpoint.
func (s *Service) UnmarshalJSON(data []byte) error {
	var raw struct {
		ID              string          `json:"id"`
		Type            json.RawMessage `json:"type"`
		ServiceEndpoint json.RawMessage `json:"serviceEndpoint"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*s = Service{ID: raw.ID}
	// Service types may be a set of strings; only a single string is used here.
	_ = json.Unmarshal(raw.Type, &s.Type)
	_ = json.Unmarshal(raw.ServiceEndpoint, &s.ServiceEndpoint)
	return nil
}

// MaxVerificationMethods bounds each list of a DID document (verification
// methods, authentication and assertionMethod entries, services,
// alsoKnownAs). Real documents hold a handful; did:plc allows at most ten
// verification methods.
const MaxVerificationMethods = 32

// ParseDocument decodes a DID document. The document must be a JSON object
// whose id is a valid DID and whose lists hold at most MaxVerificationMethods
// entries each (ErrDocumentTooLarge); unknown members are ignored.
func ParseDocument(data []byte) (*Document, error) {
	if len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
		return nil, fmt.Errorf("keyresolver: DID document is not a JSON object")
	}
	var doc Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("keyresolver: decoding DID document: %w", err)
	}
	if _, err := ValidateDID(doc.ID); err != nil {
		return nil, fmt.Errorf("keyresolver: DID document id: %w", err)
	}
	for _, n := range []struct {
		what  string
		count int
	}{
		{"verification methods", len(doc.VerificationMethod)},
		{"authentication entries", len(doc.Authentication)},
		{"assertionMethod entries", len(doc.AssertionMethod)},
		{"services", len(doc.Service)},
		{"alsoKnownAs entries", len(doc.AlsoKnownAs)},
	} {
		if n.count > MaxVerificationMethods {
			return nil, fmt.Errorf("%w: %d %s, at most %d", ErrDocumentTooLarge, n.count, n.what, MaxVerificationMethods)
		}
	}
	return &doc, nil
}

// DIDKeyDocument synthesizes the document of a did:key: id is the DID, with
// one Multikey verification method "<did>#<multibase>" listed in both
// authentication and assertionMethod.
func DIDKeyDocument(did string) (*Document, error) {
	key, err := ParseDIDKey(did)
	if err != nil {
		return nil, err
	}
	multibase := strings.TrimPrefix(did, "did:key:")
	vmID := did + "#" + multibase
	ref, err := json.Marshal(vmID)
	if err != nil {
		return nil, fmt.Errorf("keyresolver: encoding verification method id: %w", err)
	}
	return &Document{
		ID: did,
		VerificationMethod: []VerificationMethod{{
			ID: vmID, Type: "Multikey", Controller: did, PublicKeyMultibase: multibase,
		}},
		Authentication:  []json.RawMessage{ref},
		AssertionMethod: []json.RawMessage{append(json.RawMessage{}, ref...)},
		parsed:          &parsedKey{multibase: multibase, key: key},
	}, nil
}

// ParseDIDKey decodes a did:key DID into its key. The key's ID is
// "<did>#<multibase>", as in the synthesized document.
func ParseDIDKey(did string) (PublicKey, error) {
	method, err := ValidateDID(did)
	if err != nil {
		return PublicKey{}, err
	}
	if method != "key" {
		return PublicKey{}, fmt.Errorf("%w: %q is not a did:key", ErrInvalidDID, did)
	}
	multibase := strings.TrimPrefix(did, "did:key:")
	key, err := ParseMultikey(multibase)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %w", ErrInvalidDID, err)
	}
	key.ID = did + "#" + multibase
	return key, nil
}

// CandidateKeys lists the keys that may prove control of the DID: those
// referenced (or given inline) in authentication first, then those in
// assertionMethod. Keys are deduplicated by id; relative ids ("#x") are
// resolved against the document id; entries without a parseable
// publicKeyMultibase are skipped. The work is linear in the document's size:
// references are looked up in an index of the verification methods, and at
// most MaxVerificationMethods entries of each list are considered.
func (d *Document) CandidateKeys() []PublicKey {
	byID := make(map[string]int, min(len(d.VerificationMethod), MaxVerificationMethods))
	for i, vm := range d.VerificationMethod[:min(len(d.VerificationMethod), MaxVerificationMethods)] {
		if id := d.absoluteID(vm.ID); !containsKey(byID, id) {
			byID[id] = i
		}
	}
	seen := make(map[string]bool)
	var keys []PublicKey
	for _, list := range [][]json.RawMessage{d.Authentication, d.AssertionMethod} {
		for _, entry := range list[:min(len(list), MaxVerificationMethods)] {
			vm, ok := d.lookupMethod(entry, byID)
			if !ok || seen[vm.ID] || vm.PublicKeyMultibase == "" {
				continue
			}
			seen[vm.ID] = true
			key, err := d.parseMultikey(vm.PublicKeyMultibase)
			if err != nil {
				continue
			}
			key.ID = vm.ID
			keys = append(keys, key)
		}
	}
	return keys
}

func containsKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// parseMultikey is ParseMultikey, reusing the key parsed with the document
// when mb is its text.
func (d *Document) parseMultikey(mb string) (PublicKey, error) {
	if d.parsed != nil && d.parsed.multibase == mb {
		key := d.parsed.key
		key.Raw = slices.Clone(key.Raw)
		return key, nil
	}
	return ParseMultikey(mb)
}

// lookupMethod turns an authentication/assertionMethod entry into a
// verification method with an absolute id; byID indexes the document's
// verification methods by absolute id (the first of equal ids wins).
func (d *Document) lookupMethod(entry json.RawMessage, byID map[string]int) (VerificationMethod, bool) {
	var ref string
	if err := json.Unmarshal(entry, &ref); err == nil {
		ref = d.absoluteID(ref)
		i, ok := byID[ref]
		if !ok {
			return VerificationMethod{}, false
		}
		vm := d.VerificationMethod[i]
		vm.ID = ref
		return vm, true
	}
	var vm VerificationMethod
	if err := json.Unmarshal(entry, &vm); err != nil || vm.ID == "" {
		return VerificationMethod{}, false
	}
	vm.ID = d.absoluteID(vm.ID)
	return vm, true
}

func (d *Document) absoluteID(id string) string {
	if strings.HasPrefix(id, "#") {
		return d.ID + id
	}
	return id
}

// PDSEndpoint returns the serviceEndpoint of the first service with id
// "#atproto_pds" (or "<did>#atproto_pds"), type AtprotoPersonalDataServer and
// a string endpoint. The endpoint is returned as written, not validated.
func (d *Document) PDSEndpoint() (string, bool) {
	for _, svc := range d.Service {
		if d.absoluteID(svc.ID) != d.ID+"#atproto_pds" || svc.Type != "AtprotoPersonalDataServer" {
			continue
		}
		if svc.ServiceEndpoint != "" {
			return svc.ServiceEndpoint, true
		}
	}
	return "", false
}

// Handle returns the first "at://<handle>" entry of alsoKnownAs without its
// prefix, or "" if there is none. The handle is as claimed by the document;
// it is not verified against the handle's own DNS or HTTPS record.
func (d *Document) Handle() string {
	for _, aka := range d.AlsoKnownAs {
		if handle, ok := strings.CutPrefix(aka, "at://"); ok && handle != "" {
			return handle
		}
	}
	return ""
}

// clone returns a deep copy, so cached documents are never shared with callers.
func (d *Document) clone() *Document {
	c := *d
	c.AlsoKnownAs = slices.Clone(d.AlsoKnownAs)
	c.VerificationMethod = slices.Clone(d.VerificationMethod)
	c.Authentication = cloneRaw(d.Authentication)
	c.AssertionMethod = cloneRaw(d.AssertionMethod)
	c.Service = slices.Clone(d.Service)
	return &c
}

func cloneRaw(in []json.RawMessage) []json.RawMessage {
	if in == nil {
		return nil
	}
	out := make([]json.RawMessage, len(in))
	for i, m := range in {
		out[i] = slices.Clone(m)
	}
	return out
}
