package media

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
)
