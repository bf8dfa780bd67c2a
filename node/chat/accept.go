package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Outcome is what becomes of an event made elsewhere. The values are the federation wire's.
type Outcome string

const (
	Accepted  Outcome = "stored"       // apply it
	Duplicate Outcome = "duplicate"    // applied before: nothing to do
	Wait      Outcome = "wait"         // its message is not here yet: try again later
	Malformed Outcome = "malformed"    // it names its message inconsistently
	NotAuthor Outcome = "not-author"   // an edit by someone else than the author
	NotOp     Outcome = "not-op"       // a delete by neither the author nor an operator
	Unsigned  Outcome = "unauthorised" // a mutation without the signature it needs
	NoRoot    Outcome = "no-root"      // a reaction from a federated server to a message not held here
)

// Roots is the event store as the acceptance rules read it.
type Roots interface {
	Root(ctx context.Context, msgid string) (eventstore.Message, error)
}

// Authority checks what a federated server may not vouch for itself: nil for a node of this
// cluster, which checked the event against the same replicated state before storing it.
type Authority struct {
	// IsOp reports whether did is an operator of venue here.
	IsOp func(venue, did string) bool
	// Signature checks the event's signature given its root: Accepted, or why not (Unsigned, or
	// the caller's own outcome for an invalid signature).
	Signature func(root eventstore.Message) Outcome
}

// IsAuthor is the authorship rule: an authenticated author is matched by DID, a guest by nick
// (folded), and neither matches the other.
func IsAuthor(root eventstore.Message, did, nick string) bool {
	if root.SenderDID != "" {
		return did == root.SenderDID
	}
	return did == "" && nick != "" && fsm.Fold(root.SenderNick) == fsm.Fold(nick)
}

// RemoteDeletion is a delete made elsewhere: on another node of the cluster (Authority nil) or on
// a federated server.
type RemoteDeletion struct {
	Root        string            // the msgid of the message deleted (its root)
	Venue       string            // where the delete says the message is
	DeleterDID  string            // who deleted it
	DeleterNick string            // their nick
	Tags        map[string]string // the delete event's tags (+draft/delete names the root)
	Authority   *Authority
}

// AcceptDeletion applies the rules a delete made elsewhere meets before it is applied here: its
// message is here (else Wait), in the venue it names (else Malformed), not deleted yet (else
// Duplicate); and, from a federated server, deleted by its author or an operator here (else
// NotOp), naming the root (else Malformed), with a signature that authorises it. It returns the
// root for an Accepted delete; it changes nothing.
func AcceptDeletion(ctx context.Context, store Roots, d RemoteDeletion) (eventstore.Message, Outcome, error) {
	root, err := store.Root(ctx, d.Root)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return root, Wait, nil
	case err != nil:
		return root, "", fmt.Errorf("chat: delete of %s: %w", d.Root, err)
	case root.Venue != d.Venue || root.MsgID != d.Root:
		return root, Malformed, nil
	case !root.DeletedAt.IsZero():
		return root, Duplicate, nil
	case d.Authority == nil:
		return root, Accepted, nil
	}
	if !IsAuthor(root, d.DeleterDID, d.DeleterNick) && !d.Authority.IsOp(d.Venue, d.DeleterDID) {
		return root, NotOp, nil
	}
	if d.Tags["+draft/delete"] != root.MsgID {
		return root, Malformed, nil
	}
	if o := d.Authority.Signature(root); o != Accepted {
		return root, o, nil
	}
	return root, Accepted, nil
}

// RemoteEdit is an edit made elsewhere.
type RemoteEdit struct {
	Replaces  string // the root the edit revises
	Venue     string
	EditorDID string
	Tags      map[string]string // the edit's tags (+draft/edit names the root)
	Authority *Authority
}

// AcceptEdit applies the rules an edit made elsewhere meets before it is stored here. From a
// cluster node (Authority nil) every edit is stored: the store links an edit that arrives before
// its root. From a federated server the root must be here (else Wait), in the edit's venue and
// named by +draft/edit (else Malformed), written by the editor's DID (else NotAuthor), and the
// signature must authorise it.
func AcceptEdit(ctx context.Context, store Roots, e RemoteEdit) (Outcome, error) {
	if e.Authority == nil {
		return Accepted, nil
	}
	root, err := store.Root(ctx, e.Replaces)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return Wait, nil
	case err != nil:
		return "", fmt.Errorf("chat: edit of %s: %w", e.Replaces, err)
	case root.Venue != e.Venue || root.MsgID != e.Replaces || e.Tags["+draft/edit"] != root.MsgID:
		return Malformed, nil
	case root.SenderDID == "" || !IsAuthor(root, e.EditorDID, ""):
		return NotAuthor, nil
	}
	return e.Authority.Signature(root), nil
}

// RemoteReaction is a react or unreact made elsewhere.
type RemoteReaction struct {
	Root      string // the msgid of the message reacted to (its root)
	Venue     string
	Authority *Authority
}

// AcceptReaction applies the rules a reaction made elsewhere meets before it is filed here. From
// a cluster node (Authority nil) every reaction is filed: filing finds its message, or the
// reaction waits for it. From a federated server the message must be here (else NoRoot: a
// reaction is not kept for later), in the reaction's venue, under that msgid and not deleted
// (else Malformed), and the signature must speak for the reactor.
func AcceptReaction(ctx context.Context, store Roots, r RemoteReaction) (Outcome, error) {
	if r.Authority == nil {
		return Accepted, nil
	}
	root, err := store.Root(ctx, r.Root)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return NoRoot, nil
	case err != nil:
		return "", fmt.Errorf("chat: reaction to %s: %w", r.Root, err)
	case root.Venue != r.Venue || root.MsgID != r.Root || !root.DeletedAt.IsZero():
		return Malformed, nil
	}
	return r.Authority.Signature(root), nil
}
