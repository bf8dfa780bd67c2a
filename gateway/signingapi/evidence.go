package signingapi

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// BuildEvidence seals a page of a channel's messages (oldest first) into an evidence bundle: each
// message as signed (an edited message appears as its latest revision, which is what its
// signature covers), the public keys every signature names, each sender's latest key, and the
// server's signature over the JCS of the bundle. It implements rest.EvidenceBuilder.
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
	if err := signing.SignBundle(a.cfg.ServerKey, b); err != nil {
		return nil, fmt.Errorf("evidence bundle: %w", err)
	}
	return json.Marshal(b)
}

// latestKey is the DID's non-retired key seen most recently.
func (a *API) latestKey(did string) ed25519.PublicKey {
	var best *fsm.KeyRecord
	a.cfg.State.Read(func(st *fsm.State) {
		for _, k := range st.Keys[did] {
			if k.RemovedAt == 0 && (best == nil || k.LastSeenAt > best.LastSeenAt) {
				kc := *k
				best = &kc
			}
		}
	})
	if best == nil {
		return nil
	}
	return ed25519.PublicKey(best.PublicKey)
}
