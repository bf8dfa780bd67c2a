package irc

import (
	"slices"
	"strconv"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// LINKS [[<remote server>] <server mask>] (RFC 2812 3.4.5, modern.ircdocs.horse) lists the
// servers this one knows: itself under the IRC server name, hop count 0, with its
// Config.ServerInfo, then every other live node of its cluster (Config.Nodes) under its node
// name, linked to this server with hop count 1. The nodes of a cluster share one IRC server name
// (the deployment's); LINKS names the others as the cluster knows them, so that an operator sees
// which nodes serve it. A mask (a case-insensitive glob) keeps the servers whose names match it; a
// remote server other than this one is answered 402.

// ClusterNode is another node of this server's cluster as LINKS lists it.
type ClusterNode struct {
	Name string // the node's name in the cluster (its Raft server id)
	Info string // its description (its own Config.ServerInfo)
}

// linksQuery reads LINKS' parameters: the remote server asked ("" for none) and the mask ("" for
// none).
func linksQuery(params []string) (remote, mask string) {
	switch len(params) {
	case 0:
		return "", ""
	case 1:
		return "", params[0]
	default:
		return params[0], params[1]
	}
}

// linkRow is one 364 RPL_LINKS line: a server, the server it is linked through, its hop count
// and its description.
type linkRow struct {
	name, uplink string
	hops         int
	info         string
}

// linkRows lists this server, then the other nodes sorted by name, those matching mask ("" or
// "*": all).
func (s *Server) linkRows(mask string) []linkRow {
	rows := []linkRow{{name: s.cfg.ServerName, uplink: s.cfg.ServerName, info: s.cfg.ServerInfo}}
	if s.cfg.Nodes != nil {
		others := s.cfg.Nodes()
		slices.SortFunc(others, func(a, b ClusterNode) int { return strings.Compare(a.Name, b.Name) })
		for _, n := range others {
			rows = append(rows, linkRow{name: n.Name, uplink: s.cfg.ServerName, hops: 1, info: n.Info})
		}
	}
	if mask == "" || mask == "*" {
		return rows
	}
	return slices.DeleteFunc(rows, func(r linkRow) bool { return !fsm.MatchMask(mask, r.name, "") })
}

// handleLINKS answers LINKS with 364 lines and 365.
func handleLINKS(c *client, m ircmsg.Message, rb *respBuf) {
	remote, mask := linksQuery(m.Params)
	if remote != "" && !fsm.MatchMask(remote, c.s.cfg.ServerName, "") {
		rb.add(c.numericMsg("402", remote, "No such server"))
		return
	}
	for _, r := range c.s.linkRows(mask) {
		rb.add(c.numericMsg("364", r.name, r.uplink, strconv.Itoa(r.hops)+" "+r.info))
	}
	if mask == "" {
		mask = "*"
	}
	rb.add(c.numericMsg("365", mask, "End of /LINKS list"))
}
