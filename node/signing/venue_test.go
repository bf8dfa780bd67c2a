package signing

import (
	"errors"
	"testing"
)

func TestResolveVenue(t *testing.T) {
	tests := []struct {
		name                   string
		target, from, resolved string
		want                   string
		wantErr                bool
	}{
		{"channel folded", "#Ops", "did:plc:a", "", "#ops", false},
		{"ampersand channel", "&Local", "did:plc:a", "", "&local", false},
		{"DM by nick sorted", "alice", "did:plc:zzz", "did:plc:aaa", "dm:did:plc:aaa,did:plc:zzz", false},
		{"DM already in order", "bob", "did:plc:aaa", "did:plc:zzz", "dm:did:plc:aaa,did:plc:zzz", false},
		{"DM by did target", "did:plc:b", "did:plc:a", "did:plc:b", "dm:did:plc:a,did:plc:b", false},
		{"bare nick without a DID", "guest42", "did:plc:a", "", "", true},
		{"guest sender", "alice", "", "did:plc:a", "", true},
		{"empty target", "", "did:plc:a", "did:plc:b", "", true},
		{"lone hash", "#", "did:plc:a", "", "", true},
		{"recipient not a DID", "alice", "did:plc:a", "alice", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveVenue(tt.target, tt.from, tt.resolved)
			if tt.wantErr {
				if !errors.Is(err, ErrNoVenue) {
					t.Fatalf("ResolveVenue = %q, %v; want ErrNoVenue", got, err)
				}
				if !got.IsZero() {
					t.Fatal("failed resolution returned a venue")
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveVenue: %v", err)
			}
			if got.String() != tt.want {
				t.Fatalf("ResolveVenue = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseVenue(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		dm      bool
		wantErr bool
	}{
		{"#freeq", "#freeq", false, false},
		{"#MixedCase", "#mixedcase", false, false},
		{"dm:did:plc:aaa,did:plc:k2n3", "dm:did:plc:aaa,did:plc:k2n3", true, false},
		{"dm:did:plc:zzz,did:plc:aaa", "dm:did:plc:aaa,did:plc:zzz", true, false},
		{"dm:did:plc:aaa", "", false, true},
		{"dm:did:plc:a,did:plc:b,did:plc:c", "", false, true},
		{"dm:alice,bob", "", false, true},
		{"alice", "", false, true},
		{"", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVenue(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseVenue(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVenue: %v", err)
			}
			if got.String() != tt.want || got.IsDM() != tt.dm {
				t.Fatalf("ParseVenue = %q (dm %v), want %q (dm %v)", got, got.IsDM(), tt.want, tt.dm)
			}
		})
	}
}
