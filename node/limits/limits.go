package limits

// What the IRC edge accepts from a client.
const (
	// LineBytes is the longest IRC line, its tags and CRLF included.
	LineBytes = 8192
	// ClientTagBytes is the most client-only tag data one message may carry (IRCv3 message-tags).
	ClientTagBytes = 4094
	// MultilineBytes and MultilineLines bound one draft/multiline message: its text, newlines
	// included, and its lines (the capability's max-bytes and max-lines).
	MultilineBytes = 40000
	MultilineLines = 100
)

// What one chat item (a message or an edit, a delete, a reaction) may hold wherever it is stored
// or carried: the edge accepts nothing larger, and a receiver refuses anything larger as a dead
// letter.
const (
	// TextBytes is the longest text of a stored message: a multiline message's, which is longer
	// than any single line.
	TextBytes = MultilineBytes
	// TagBytes bounds one item's tags, keys and values together: the client's tags and those the
	// server adds (msgid, signature, account, origin).
	TagBytes = 8191
	// Tags bounds the number of tags of one item.
	Tags = 64
	// MsgIDBytes, VenueBytes and NameBytes bound an item's msgid, venue (channel or DM key) and
	// each of its names (sender prefix, nick, DID).
	MsgIDBytes = 64
	VenueBytes = 512
	NameBytes  = 512
)

// What each hop between nodes and servers carries.
const (
	// PageItems is the most rows of one log a stream frame or a pull answer takes (the exchange's
	// default page; a configured page is capped to it).
	PageItems = 500
	// FrameItems bounds the records of one section of a stream frame, as a decoder checks.
	FrameItems = 4096
	// StreamFrameBytes bounds one frame of a cluster stream.
	StreamFrameBytes = 64 << 20
	// PullBytes bounds one answer to a pull (and one push) between cluster nodes.
	PullBytes = 32 << 20
	// ServerFrameItems and ServerFrameBytes bound one frame of a stream to a configured server:
	// its items are the federation limit per second.
	ServerFrameItems = 100
	ServerFrameBytes = 8 << 20
	// EnvelopeBytes and EnvelopeItems bound one signed federation envelope.
	EnvelopeBytes = 4 << 20
	EnvelopeItems = ServerFrameItems
)

// UploadBytes is the largest media upload body.
const UploadBytes = 12 << 20
