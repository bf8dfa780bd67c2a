// Package canonical owns Palaver's one canonical-JSON encoder: JCS, RFC 8785.
// Every byte string that is signed or hashed as JSON (chat and ACT signing
// documents, evidence bundles) is produced here and nowhere else.
//
// Transform canonicalizes JSON text and is github.com/gowebpki/jcs, which
// reproduces every freeq signing vector byte for byte: it escapes only '"',
// '\' and control characters below U+0020 (as \b \f \n \r \t or lowercase
// \u00xx), writes every other character as raw UTF-8 (U+2028, U+2029, '<',
// '>' and '&' included, which encoding/json would escape), sorts members by
// UTF-16 code units, formats numbers as ECMAScript does, and refuses
// duplicate keys, invalid UTF-8 and lone surrogates.
//
// Marshal writes the same canonical form straight from Go values. It is
// hand-written rather than encoding/json followed by Transform because the
// signing layer canonicalizes a document for every message it signs or
// verifies, and a direct writer avoids encoding to JSON only to parse it back.
// The tests hold the two paths to the same output.
package canonical
