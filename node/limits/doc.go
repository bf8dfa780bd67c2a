// Package limits owns the one table of size limits a chat item meets on its way: what the IRC
// edge accepts (a line, its tags, a draft/multiline message), what an item of the chat plane may
// hold, and what each hop between nodes and servers carries (a cluster stream's frame, a pull's
// answer, a server stream's frame, a federation envelope), with the media upload bound. The IRC
// edge, the exchange, federation and the discovery documents read their limits from here, so an
// item the edge accepts is one every hop carries: limits_test.go in federation/exchange checks it
// against the real encodings (the stream's binary form, the pull's JSON), not by arithmetic.
//
// The package is a leaf: constants only, no imports of the rest of the code.
package limits
