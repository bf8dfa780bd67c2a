package raft

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/palaver-chat/palaver/raft/trust"
)

// OperatorClient is an authenticated connection to one node's operator plane (see operator.go).
// It carries one call at a time.
type OperatorClient struct {
	conn   *tls.Conn
	reader *bufio.Reader
	node   string // the node that answered, from its certificate's common name (informative)
}

// DialOperator connects to the cluster listener at addr and proves it holds the cluster secret
// (its CA keys), then checks that the node's certificate chains to a CA of the secret.
// ErrOperatorRefused when the node accepts no proof. For a node of the previous version the
// earlier proof with the gossip keys is sent too, each key on its own connection (newest first),
// so a client holding a rotated file still reaches a node holding the older one.
func DialOperator(ctx context.Context, addr string, secret *trust.Secret) (*OperatorClient, error) {
	if len(secret.GossipKeys) == 0 {
		return nil, errors.New("raft: operator: no gossip key in the cluster secret")
	}
	var last error
	for _, g := range secret.GossipKeys {
		key, err := operatorKey(g)
		if err != nil {
			return nil, err
		}
		c, err := dialOperatorWith(ctx, addr, secret, key)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, ErrOperatorRefused) {
			return nil, err
		}
		last = err
	}
	return nil, last
}

func dialOperatorWith(ctx context.Context, addr string, secret *trust.Secret, key []byte) (*OperatorClient, error) {
	ctx, cancel := context.WithTimeout(ctx, operatorAuthTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raft: operator: dial %s: %w", addr, err)
	}
	conn := tls.Client(raw, &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{alpnOperator},
		// The node's chain is checked against the secret's CAs once it answered the proof (a
		// node of another cluster answers "unauthorized" first); host names are not checked.
		InsecureSkipVerify: true,
	})
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("raft: operator: TLS handshake with %s: %w", addr, err)
	}
	cs := conn.ConnectionState()
	if cs.NegotiatedProtocol != alpnOperator {
		conn.Close()
		return nil, fmt.Errorf("raft: operator: %s does not serve the operator plane (an older version?)", addr)
	}
	material, err := sessionMaterial(cs)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sigs, err := secret.SignOperator(material)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := &OperatorClient{conn: conn, reader: bufio.NewReader(conn)}
	if len(cs.PeerCertificates) > 0 {
		c.node = cs.PeerCertificates[0].Subject.CommonName
	}
	resp, err := c.roundTrip(ctx, &operatorRequest{Op: operatorAuth, Sigs: sigs, MAC: operatorMAC(key, "client", material)})
	switch {
	case err != nil:
	case resp.Code == codeUnauthorized:
		err = ErrOperatorRefused
	case resp.Code != "":
		err = fmt.Errorf("raft: operator: %s: %s", resp.Code, resp.Error)
	case resp.MAC != nil && !hmac.Equal(resp.MAC, operatorMAC(key, "server", material)):
		err = fmt.Errorf("raft: operator: %s did not prove it holds the cluster secret", addr)
	default:
		var raws [][]byte
		for _, cert := range cs.PeerCertificates {
			raws = append(raws, cert.Raw)
		}
		if _, verr := secret.VerifyNode(raws); verr != nil {
			err = fmt.Errorf("raft: operator: %s is not a node of this cluster: %w", addr, verr)
		}
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// roundTrip sends one call and reads its answer, bounded by ctx.
func (c *OperatorClient) roundTrip(ctx context.Context, req *operatorRequest) (*operatorResponse, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(rpcDefaultTimeout)
	}
	req.TimeoutMS = max(time.Until(deadline).Milliseconds(), 1)
	c.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeFrame(c.conn, req); err != nil {
		return nil, fmt.Errorf("raft: operator %s: %w", req.Op, err)
	}
	var resp operatorResponse
	if err := readFrame(c.reader, &resp); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("raft: operator %s: %w", req.Op, ctxErr)
		}
		return nil, fmt.Errorf("raft: operator %s: %w", req.Op, err)
	}
	return &resp, nil
}

// call runs one operator call; an answer with a code is an error.
func (c *OperatorClient) call(ctx context.Context, req *operatorRequest) (*operatorResponse, error) {
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != "" {
		return nil, fmt.Errorf("%s", resp.Error)
	}
	return resp, nil
}

// Node is the id in the answering node's certificate.
func (c *OperatorClient) Node() string { return c.node }

// Status asks the node for the cluster's status: every member's report.
func (c *OperatorClient) Status(ctx context.Context) (*ClusterStatus, error) {
	resp, err := c.call(ctx, &operatorRequest{Op: operatorStatus})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, errors.New("raft: operator status: empty answer")
	}
	return resp.Status, nil
}

// Remove removes node, which must not be alive in gossip, from the raft configuration and has its
// sessions purged.
func (c *OperatorClient) Remove(ctx context.Context, node string) error {
	_, err := c.call(ctx, &operatorRequest{Op: operatorRemove, Node: node})
	return err
}

// TransferLeadership hands leadership to node (to any up-to-date voter when empty) and returns
// the leader known after the transfer.
func (c *OperatorClient) TransferLeadership(ctx context.Context, node string) (string, error) {
	resp, err := c.call(ctx, &operatorRequest{Op: operatorTransfer, Node: node})
	if err != nil {
		return "", err
	}
	return resp.Leader, nil
}

// Close closes the connection.
func (c *OperatorClient) Close() error { return c.conn.Close() }
