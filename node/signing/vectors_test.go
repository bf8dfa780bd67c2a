package signing

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The freeq vector files, read from the repository's testdata.
var vectorDir = filepath.Join("..", "..", "testdata", "vectors")

type chatInput struct {
	Kind           string            `json:"kind"`
	From           string            `json:"from"`
	MsgID          string            `json:"msgid"`
	Target         string            `json:"target"`
	RawTarget      string            `json:"rawTarget"`
	DMParticipants []string          `json:"dmParticipants"`
	BodyText       string            `json:"bodyText"`
	EventType      string            `json:"eventType"`
	Reply          string            `json:"reply"`
	Edit           string            `json:"edit"`
	Tags           map[string]string `json:"tags"`
	Subject        string            `json:"subject"`
	Emoji          string            `json:"emoji"`
	Payload        string            `json:"payload"`
	Ref            string            `json:"ref"`
	Evidence       string            `json:"evidence"`
}

type keyedVector struct {
	Name      string `json:"name"`
	Seed      string `json:"seed"`
	PublicKey string `json:"publicKey"`
	KID       string `json:"kid"`
	Canonical string `json:"canonical"`
	SigTag    string `json:"sigTag"`
}

type chatVectors struct {
	Vectors []struct {
		keyedVector
		Input chatInput `json:"input"`
	} `json:"vectors"`
	Negatives []struct {
		Name              string `json:"name"`
		Vector            string `json:"vector"`
		Expected          string `json:"expected"`
		TamperedCanonical string `json:"tamperedCanonical"`
		SigTag            string `json:"sigTag"`
	} `json:"negatives"`
}

type actVectors struct {
	Vectors []struct {
		keyedVector
		Tags   map[string]string `json:"tags"`
		Target string            `json:"target"`
		ID     string            `json:"id"`
	} `json:"vectors"`
	Negatives []struct {
		Name              string `json:"name"`
		Vector            string `json:"vector"`
		Expected          string `json:"expected"`
		TamperedCanonical string `json:"tamperedCanonical"`
		Target            string `json:"target"`
		ID                string `json:"id"`
		StrippedTag       string `json:"strippedTag"`
		SwappedTag        *struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"swappedTag"`
		SigAlgorithm string `json:"sigAlgorithm"`
	} `json:"negatives"`
}

func loadJSON(t testing.TB, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
}

// checkKey derives the vector's key pair from its seed and checks its public
// key and kid.
func checkKey(t *testing.T, v keyedVector) ed25519.PrivateKey {
	t.Helper()
	seed, err := hex.DecodeString(v.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("seed %q: %v", v.Seed, err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	if got := EncodePublicKey(pub); got != v.PublicKey {
		t.Fatalf("public key %s, want %s", got, v.PublicKey)
	}
	if got := KID(pub); got != v.KID {
		t.Fatalf("KID %s, want %s", got, v.KID)
	}
	return priv
}

// vectorKeys files every public key of both vector files.
func vectorKeys(t *testing.T) Keys {
	t.Helper()
	keys := Keys{}
	var chat chatVectors
	var act actVectors
	loadJSON(t, "chat-signing-vectors.json", &chat)
	loadJSON(t, "act-signing-vectors.json", &act)
	for _, v := range chat.Vectors {
		pub, err := ParsePublicKey(v.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		keys.Add(pub)
	}
	for _, v := range act.Vectors {
		pub, err := ParsePublicKey(v.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		keys.Add(pub)
	}
	return keys
}

// chatVenue builds the venue from the vector's wire-side description.
func chatVenue(t *testing.T, in chatInput) Venue {
	t.Helper()
	var venue Venue
	var err error
	switch {
	case len(in.DMParticipants) == 2:
		venue, err = DMVenue(in.DMParticipants[0], in.DMParticipants[1])
	case in.RawTarget != "":
		venue, err = ResolveVenue(in.RawTarget, in.From, "")
	default:
		venue, err = ResolveVenue(in.Target, in.From, "")
	}
	if err != nil {
		t.Fatalf("venue: %v", err)
	}
	if venue.String() != in.Target {
		t.Fatalf("venue %q, want %q", venue, in.Target)
	}
	return venue
}

// chatDocument builds the vector's document from its structured input.
func chatDocument(t *testing.T, in chatInput) Document {
	t.Helper()
	env := Envelope{From: in.From, MsgID: in.MsgID, Venue: chatVenue(t, in)}
	switch in.Kind {
	case "message":
		return Message{Envelope: env, Body: in.BodyText, Reply: in.Reply, Edit: in.Edit, Tags: in.Tags}
	case KindDelete, KindReact, KindUnreact:
		return Mutation{Envelope: env, Kind: in.Kind, Subject: in.Subject, Emoji: in.Emoji}
	case KindCoordination:
		return Coordination{Envelope: env, Event: in.EventType, Payload: in.Payload, Ref: in.Ref, Evidence: in.Evidence}
	}
	t.Fatalf("unknown vector kind %q", in.Kind)
	return nil
}

// chatWire returns the command and wire tags a client would send for the
// vector, to check DocumentFromTags against the same canonical.
func chatWire(in chatInput) (string, map[string]string) {
	tags := map[string]string{}
	for k, v := range in.Tags {
		tags[k] = v
	}
	put := func(name, value string) {
		if value != "" {
			tags[name] = value
		}
	}
	switch in.Kind {
	case "message":
		put(TagReply, in.Reply)
		put(TagDraftEdit, in.Edit)
		return "PRIVMSG", tags
	case KindDelete:
		put(TagDraftDelete, in.Subject)
	case KindReact:
		put(TagReact, in.Emoji)
		put(TagReply, in.Subject)
	case KindUnreact:
		put(TagUnreact, in.Emoji)
		put(TagReply, in.Subject)
	case KindCoordination:
		put(TagEvent, in.EventType)
		put(TagPayload, in.Payload)
		put(TagRef, in.Ref)
		put(TagEvidenceType, in.Evidence)
	}
	tags["+typing"] = "active" // never covered
	return "TAGMSG", tags
}

func TestChatVectors(t *testing.T) {
	var file chatVectors
	loadJSON(t, "chat-signing-vectors.json", &file)
	if len(file.Vectors) != 13 || len(file.Negatives) != 15 {
		t.Fatalf("got %d vectors and %d negatives, want 13 and 15", len(file.Vectors), len(file.Negatives))
	}
	keys := vectorKeys(t)
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			priv := checkKey(t, v.keyedVector)
			got, err := chatDocument(t, v.Input).Canonical()
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			if string(got) != v.Canonical {
				t.Fatalf("canonical\n got %s\nwant %s", got, v.Canonical)
			}
			if tag := Sign(priv, got); tag != v.SigTag {
				t.Fatalf("sig tag\n got %s\nwant %s", tag, v.SigTag)
			}
			if verdict, reason := Verify(got, v.SigTag, keys.Lookup); verdict != Valid {
				t.Fatalf("Verify = %v (%s), want valid", verdict, reason)
			}

			command, tags := chatWire(v.Input)
			env := Envelope{From: v.Input.From, MsgID: v.Input.MsgID, Venue: chatVenue(t, v.Input)}
			doc, err := DocumentFromTags(command, env, v.Input.BodyText, tags)
			if err != nil {
				t.Fatalf("DocumentFromTags: %v", err)
			}
			fromWire, err := doc.Canonical()
			if err != nil {
				t.Fatalf("Canonical from wire tags: %v", err)
			}
			if string(fromWire) != v.Canonical {
				t.Fatalf("canonical from wire tags\n got %s\nwant %s", fromWire, v.Canonical)
			}
		})
	}

	byName := map[string]keyedVector{}
	for _, v := range file.Vectors {
		byName[v.Name] = v.keyedVector
	}
	for _, n := range file.Negatives {
		t.Run("negative/"+n.Name, func(t *testing.T) {
			v, ok := byName[n.Vector]
			if !ok {
				t.Fatalf("negative names unknown vector %q", n.Vector)
			}
			canon, tag := v.Canonical, v.SigTag
			if n.SigTag != "" {
				tag = n.SigTag // a tag-level attack against the vector's canonical
			} else {
				canon = n.TamperedCanonical // a document-level attack
			}
			verdict, reason := Verify([]byte(canon), tag, keys.Lookup)
			if verdict.String() != n.Expected {
				t.Fatalf("Verify = %v (%s), want %s", verdict, reason, n.Expected)
			}
		})
	}
}

// TestChatNegativeWrongKidWithLyingLookup covers the other half of the kid
// rule: a lookup that answers a kid with a key that does not hash to it
// (a misbehaving key server) must not turn a wrong kid into "invalid".
func TestChatNegativeWrongKidWithLyingLookup(t *testing.T) {
	var file chatVectors
	loadJSON(t, "chat-signing-vectors.json", &file)
	plain := file.Vectors[0]
	pub, err := ParsePublicKey(plain.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	anyKid := func(string) (ed25519.PublicKey, bool) { return pub, true }
	for _, n := range file.Negatives {
		if n.Name != "wrong-kid" {
			continue
		}
		verdict, reason := Verify([]byte(plain.Canonical), n.SigTag, anyKid)
		if verdict != Unverifiable || reason != ReasonKIDMismatch {
			t.Fatalf("Verify = %v (%s), want unverifiable (%s)", verdict, reason, ReasonKIDMismatch)
		}
		return
	}
	t.Fatal("no wrong-kid negative in the vectors")
}

func TestActVectors(t *testing.T) {
	var file actVectors
	loadJSON(t, "act-signing-vectors.json", &file)
	if len(file.Vectors) != 8 || len(file.Negatives) != 6 {
		t.Fatalf("got %d vectors and %d negatives, want 8 and 6", len(file.Vectors), len(file.Negatives))
	}
	keys := vectorKeys(t)
	type actVector = struct {
		keyedVector
		tags   map[string]string
		target string
		id     string
	}
	byName := map[string]actVector{}
	for _, v := range file.Vectors {
		byName[v.Name] = actVector{v.keyedVector, v.Tags, v.Target, v.ID}
		t.Run(v.Name, func(t *testing.T) {
			priv := checkKey(t, v.keyedVector)
			venue, err := ParseVenue(v.Target)
			if err != nil || venue.String() != v.Target {
				t.Fatalf("ParseVenue(%q) = %q, %v", v.Target, venue, err)
			}
			got, err := Act{ID: v.ID, Venue: venue, Tags: v.Tags}.Canonical()
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			if string(got) != v.Canonical {
				t.Fatalf("canonical\n got %s\nwant %s", got, v.Canonical)
			}
			if tag := Sign(priv, got); tag != v.SigTag {
				t.Fatalf("sig tag\n got %s\nwant %s", tag, v.SigTag)
			}
			doc, err := DocumentFromTags("TAGMSG", Envelope{MsgID: v.ID, Venue: venue}, "", v.Tags)
			if err != nil {
				t.Fatalf("DocumentFromTags: %v", err)
			}
			if verdict, reason := VerifyDocument(doc, v.SigTag, keys.Lookup); verdict != Valid {
				t.Fatalf("VerifyDocument = %v (%s), want valid", verdict, reason)
			}
		})
	}

	for _, n := range file.Negatives {
		t.Run("negative/"+n.Name, func(t *testing.T) {
			v, ok := byName[n.Vector]
			if !ok {
				t.Fatalf("negative names unknown vector %q", n.Vector)
			}
			tags := map[string]string{}
			for k, val := range v.tags {
				tags[k] = val
			}
			if n.StrippedTag != "" {
				delete(tags, n.StrippedTag)
			}
			if n.SwappedTag != nil {
				tags[n.SwappedTag.Name] = n.SwappedTag.Value
			}
			tag := v.SigTag
			if n.SigAlgorithm != "" {
				_, rest, _ := strings.Cut(tag, ":")
				tag = n.SigAlgorithm + ":" + rest
			}
			venue, err := ParseVenue(n.Target)
			if err != nil {
				t.Fatalf("ParseVenue(%q): %v", n.Target, err)
			}
			doc := Act{ID: n.ID, Venue: venue, Tags: tags}
			if n.TamperedCanonical != "" {
				got, err := doc.Canonical()
				if err != nil {
					t.Fatalf("Canonical: %v", err)
				}
				if string(got) != n.TamperedCanonical {
					t.Fatalf("rebuilt canonical\n got %s\nwant %s", got, n.TamperedCanonical)
				}
			}
			verdict, reason := VerifyDocument(doc, tag, keys.Lookup)
			if verdict.String() != n.Expected {
				t.Fatalf("VerifyDocument = %v (%s), want %s", verdict, reason, n.Expected)
			}
		})
	}
}
