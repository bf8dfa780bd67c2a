package coord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/palaver-chat/palaver/keyresolver"
)

// Manifest is an agent manifest (TOML or JSON) as this server validates and stores it.
type Manifest struct {
	Agent        ManifestAgent        `json:"agent" toml:"agent"`
	Provenance   ManifestProvenance   `json:"provenance" toml:"provenance"`
	Capabilities ManifestCapabilities `json:"capabilities" toml:"capabilities"`
	Presence     ManifestPresence     `json:"presence" toml:"presence"`
}

// ManifestAgent describes the agent.
type ManifestAgent struct {
	DisplayName      string `json:"display_name" toml:"display_name"`
	ActorClass       string `json:"actor_class" toml:"actor_class"`
	Description      string `json:"description,omitempty" toml:"description"`
	SourceRepo       string `json:"source_repo,omitempty" toml:"source_repo"`
	ImageDigest      string `json:"image_digest,omitempty" toml:"image_digest"`
	Version          string `json:"version,omitempty" toml:"version"`
	DocumentationURL string `json:"documentation_url,omitempty" toml:"documentation_url"`
}

// ManifestProvenance says where the agent comes from and who may revoke it.
type ManifestProvenance struct {
	OriginType          string `json:"origin_type" toml:"origin_type"`
	CreatorDID          string `json:"creator_did" toml:"creator_did"`
	RevocationAuthority string `json:"revocation_authority" toml:"revocation_authority"`
	AuthorityBasis      string `json:"authority_basis,omitempty" toml:"authority_basis"`
}

// ManifestCapabilities are the capabilities the agent asks for, by default and per channel.
type ManifestCapabilities struct {
	Default  []string            `json:"default" toml:"default"`
	Channels map[string][]string `json:"channels,omitempty" toml:"channels"`
}

// ManifestPresence is how often the agent promises a heartbeat.
type ManifestPresence struct {
	HeartbeatIntervalSeconds int `json:"heartbeat_interval_seconds" toml:"heartbeat_interval_seconds"`
}

// Manifest limits.
const (
	maxManifestText         = 2048
	maxManifestCapabilities = 64
	maxManifestChannels     = 64
	maxCapabilityName       = 128
)

// ErrManifestTooLarge is a manifest over the size limit.
var ErrManifestTooLarge = errors.New("manifest too large")

// ParseManifest reads a manifest in TOML or JSON (a body starting with '{' is JSON), checks it,
// and returns it with its canonical JSON encoding.
func ParseManifest(data []byte, maxBytes int) (Manifest, []byte, error) {
	var m Manifest
	if len(data) > maxBytes {
		return m, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrManifestTooLarge, len(data), maxBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return m, nil, errors.New("empty manifest")
	}
	if trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&m); err != nil {
			return m, nil, fmt.Errorf("manifest JSON: %w", err)
		}
		if dec.More() {
			return m, nil, errors.New("manifest JSON: data after the object")
		}
	} else if err := toml.Unmarshal(trimmed, &m); err != nil {
		return m, nil, fmt.Errorf("manifest TOML: %w", err)
	}
	if err := m.check(); err != nil {
		return m, nil, err
	}
	out, err := json.Marshal(m)
	if err != nil {
		return m, nil, fmt.Errorf("manifest: encode: %w", err)
	}
	return m, out, nil
}

func (m *Manifest) check() error {
	a := &m.Agent
	if a.ActorClass == "" {
		a.ActorClass = "agent"
	}
	if m.Presence.HeartbeatIntervalSeconds == 0 {
		m.Presence.HeartbeatIntervalSeconds = 30
	}
	switch {
	case strings.TrimSpace(a.DisplayName) == "":
		return errors.New("manifest: agent.display_name is required")
	case a.ActorClass != "agent" && a.ActorClass != "external_agent":
		return fmt.Errorf("manifest: agent.actor_class %q is not agent or external_agent", short(a.ActorClass))
	case m.Provenance.OriginType == "":
		return errors.New("manifest: provenance.origin_type is required")
	case m.Presence.HeartbeatIntervalSeconds < 1 || m.Presence.HeartbeatIntervalSeconds > 86400:
		return errors.New("manifest: presence.heartbeat_interval_seconds must be 1 to 86400")
	}
	for name, did := range map[string]string{"provenance.creator_did": m.Provenance.CreatorDID, "provenance.revocation_authority": m.Provenance.RevocationAuthority} {
		if _, err := keyresolver.ValidateDID(did); err != nil {
			return fmt.Errorf("manifest: %s: %w", name, err)
		}
	}
	for name, s := range map[string]string{"agent.display_name": a.DisplayName, "agent.description": a.Description,
		"agent.source_repo": a.SourceRepo, "agent.image_digest": a.ImageDigest, "agent.version": a.Version,
		"agent.documentation_url": a.DocumentationURL, "provenance.origin_type": m.Provenance.OriginType,
		"provenance.authority_basis": m.Provenance.AuthorityBasis} {
		if len(s) > maxManifestText {
			return fmt.Errorf("manifest: %s is longer than %d bytes", name, maxManifestText)
		}
	}
	if m.Capabilities.Default == nil {
		m.Capabilities.Default = []string{}
	}
	if err := checkCapabilities("capabilities.default", m.Capabilities.Default); err != nil {
		return err
	}
	if len(m.Capabilities.Channels) > maxManifestChannels {
		return fmt.Errorf("manifest: more than %d channels under capabilities.channels", maxManifestChannels)
	}
	for ch, caps := range m.Capabilities.Channels {
		if ch == "" || len(ch) > 64 {
			return errors.New("manifest: a channel name under capabilities.channels is empty or too long")
		}
		if err := checkCapabilities("capabilities.channels."+ch, caps); err != nil {
			return err
		}
	}
	return nil
}

func checkCapabilities(where string, caps []string) error {
	if len(caps) > maxManifestCapabilities {
		return fmt.Errorf("manifest: more than %d capabilities in %s", maxManifestCapabilities, where)
	}
	for _, c := range caps {
		if c == "" || len(c) > maxCapabilityName || strings.ContainsAny(c, " \t\r\n") {
			return fmt.Errorf("manifest: capability %q in %s is empty, too long or holds a space", short(c), where)
		}
	}
	return nil
}

// short keeps error messages short when they quote input.
func short(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
