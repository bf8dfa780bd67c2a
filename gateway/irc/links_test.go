package irc

import (
	"slices"
	"testing"
)

func TestLinksQuery(t *testing.T) {
	tests := []struct {
		name         string
		params       []string
		remote, mask string
	}{
		{"no parameters", nil, "", ""},
		{"a mask", []string{"*.example"}, "", "*.example"},
		{"a remote server and a mask", []string{"irc.example", "node-*"}, "irc.example", "node-*"},
		{"more parameters than two", []string{"irc.example", "node-*", "extra"}, "irc.example", "node-*"},
	}
	for _, tt := range tests {
		remote, mask := linksQuery(tt.params)
		if remote != tt.remote || mask != tt.mask {
			t.Errorf("%s: linksQuery(%q) = %q, %q; want %q, %q", tt.name, tt.params, remote, mask, tt.remote, tt.mask)
		}
	}
}

func TestLinkRows(t *testing.T) {
	nodes := []ClusterNode{{Name: "node-c.example", Info: "third"}, {Name: "node-b.example", Info: "second"}}
	s := &Server{cfg: Config{ServerName: "irc.example", ServerInfo: "first", Nodes: func() []ClusterNode { return slices.Clone(nodes) }}}
	self := linkRow{name: "irc.example", uplink: "irc.example", hops: 0, info: "first"}
	b := linkRow{name: "node-b.example", uplink: "irc.example", hops: 1, info: "second"}
	c := linkRow{name: "node-c.example", uplink: "irc.example", hops: 1, info: "third"}
	tests := []struct {
		name string
		mask string
		want []linkRow
	}{
		{"no mask: this server first, then the nodes by name", "", []linkRow{self, b, c}},
		{"*", "*", []linkRow{self, b, c}},
		{"the nodes", "node-*", []linkRow{b, c}},
		{"case-insensitive", "NODE-B.*", []linkRow{b}},
		{"one character", "node-?.example", []linkRow{b, c}},
		{"this server", "irc.example", []linkRow{self}},
		{"nothing", "*.invalid", nil},
	}
	for _, tt := range tests {
		if got := s.linkRows(tt.mask); !slices.Equal(got, tt.want) {
			t.Errorf("%s: linkRows(%q) = %+v, want %+v", tt.name, tt.mask, got, tt.want)
		}
	}
	alone := &Server{cfg: Config{ServerName: "irc.example", ServerInfo: "first"}}
	if got := alone.linkRows(""); !slices.Equal(got, []linkRow{self}) {
		t.Errorf("an unclustered node: %+v", got)
	}
}
