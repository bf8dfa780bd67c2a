package av

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
	didCarol = "did:plc:carol"
)

// genTexts are the reasons and titles of the command generator.
var genTexts = []string{"", "hello", "bye", "another text"}
