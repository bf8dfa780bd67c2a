package signingapi

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/palaver-chat/palaver/node/canonical"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// evidenceMessage is a bundle message with the canonical bytes its signature covers (null for an
// unsigned message or one whose document cannot be rebuilt). Readers that do not know the fields
// ignore them; the bundle signature covers them like every other field.
type evidenceMessage struct {
	signing.BundleMessage
	CanonicalForm *string `json:"canonical_form"`
	CanonicalHex  *string `json:"canonical_hex"`
}

// evidenceBundle is signing.Bundle with evidenceMessages (the outer Messages field wins in JSON).
type evidenceBundle struct {
	signing.Bundle
	Messages []evidenceMessage `json:"messages"`
}

// BuildEvidence seals a page of a channel's messages (oldest first) into an evidence bundle: each
// message as signed (an edited message appears as its latest revision, which is what its
// signature covers) with the canonical bytes signed, the public keys every signature names, each
// sender's latest key, and the server's signature over the JCS of the bundle. It implements
// rest.EvidenceBuilder.
func (a *API) BuildEvidence(_ context.Context, channel string, msgs []eventstore.Message) ([]byte, error) {
	b := &signing.Bundle{
		BundleVersion: signing.BundleVersion, ServerName: a.cfg.ServerName, ServerPublicKey: signing.EncodePublicKey(a.pub),
		Channel: channel, ExportedAt: a.cfg.Now().UTC().Format("2006-01-02T15:04:05Z07:00"), MessageCount: len(msgs),
		Keys: map[string]string{}, DIDKeys: map[string]string{}, Messages: make([]signing.BundleMessage, 0, len(msgs)),
	}
	for _, m := range msgs {
		msgid, replaces := m.MsgID, m.ReplacesMsgID
		if m.Revision != "" {
			msgid, replaces = m.Revision, m.MsgID
		}
		sig := signing.SigFromTags(m.Tags)
		b.Messages = append(b.Messages, signing.BundleMessage{
			MsgID: msgid, Channel: m.Venue, Sender: m.SenderNick, SenderDID: signing.NullString(m.SenderDID),
			Text: m.Text, Timestamp: m.Time.Unix(), Signature: signing.NullString(sig),
			ReplacesMsgID: signing.NullString(replaces), Tags: m.Tags,
		})
		if tag, err := signing.ParseSigTag(sig); err == nil {
			if key, _ := a.findKey(m.SenderDID, tag.KID); key != nil {
				b.Keys[key.KID] = signing.EncodePublicKey(key.PublicKey)
			}
		}
		if m.SenderDID != "" {
			if _, done := b.DIDKeys[m.SenderDID]; !done {
				if pub := a.latestKey(m.SenderDID); pub != nil {
					b.DIDKeys[m.SenderDID] = signing.EncodePublicKey(pub)
				}
			}
		}
	}
	// SignBundle fills the derived fields; the seal is then made again over the messages with
	// their canonical bytes.
	if err := signing.SignBundle(a.cfg.ServerKey, b); err != nil {
		return nil, fmt.Errorf("evidence bundle: %w", err)
	}
	out := evidenceBundle{Bundle: *b, Messages: make([]evidenceMessage, len(b.Messages))}
	for i, bm := range b.Messages {
		out.Messages[i] = evidenceMessage{BundleMessage: bm}
		if bm.Signature == "" {
			continue
		}
		if canon, problem := canonicalOf(msgs[i], bm.MsgID); problem == "" {
			form, hexed := string(canon), hex.EncodeToString(canon)
			out.Messages[i].CanonicalForm, out.Messages[i].CanonicalHex = &form, &hexed
		}
	}
	out.BundleSignature = ""
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("evidence bundle: encode: %w", err)
	}
	signed, err := canonical.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("evidence bundle: %w", err)
	}
	out.BundleSignature = base64.RawURLEncoding.EncodeToString(ed25519.Sign(a.cfg.ServerKey, signed))
	return json.Marshal(out)
}

// latestKey is the DID's non-retired key seen most recently.
func (a *API) latestKey(did string) ed25519.PublicKey {
	var best *fsm.KeyRecord
	a.cfg.State.Read(func(st *fsm.State) {
		for _, k := range st.KeysOf(did) {
			if k.RemovedAt() == 0 && (best == nil || k.LastSeenAt() > best.LastSeenAt) {
				kc := k.Record()
				best = &kc
			}
		}
	})
	if best == nil {
		return nil
	}
	return ed25519.PublicKey(best.PublicKey)
}
