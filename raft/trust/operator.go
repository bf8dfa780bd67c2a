package trust

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"time"
)

// The operator's proof (raft's operator plane): the holder of the secret signs keying material
// exported from its TLS session with the node with each CA key of the file, and the node checks
// one signature against the CA certificates it trusts. Nodes hold those certificates and no CA
// key, so a node's disk (its credentials, gossip keys included) cannot make the proof.

// operatorContext prefixes what an operator signs, so the signature means nothing elsewhere.
const operatorContext = "palaver operator proof v2\x00"

// MaxOperatorProofs bounds the signatures one proof carries (one per CA key of the secret).
const MaxOperatorProofs = 8

func operatorDigest(material []byte) []byte {
	h := sha256.New()
	h.Write([]byte(operatorContext))
	h.Write(material)
	return h.Sum(nil)
}

// SignOperator signs material with every CA key of s (primary first); none when s holds no CA
// key, as a node's credentials do not.
func (s *Secret) SignOperator(material []byte) ([][]byte, error) {
	var sigs [][]byte
	for _, ca := range s.CAs {
		key, ok := ca.Key.(*ecdsa.PrivateKey)
		if !ok || len(sigs) == MaxOperatorProofs {
			continue
		}
		sig, err := ecdsa.SignASN1(rand.Reader, key, operatorDigest(material))
		if err != nil {
			return nil, fmt.Errorf("trust: sign the operator proof: %w", err)
		}
		sigs = append(sigs, sig)
	}
	return sigs, nil
}

// VerifyOperator reports whether one of sigs (at most MaxOperatorProofs) is a signature over
// material by the key of a CA this identity trusts.
func (id *Identity) VerifyOperator(material []byte, sigs [][]byte) bool {
	if len(sigs) > MaxOperatorProofs {
		return false
	}
	digest := operatorDigest(material)
	for _, ca := range id.cas {
		pub, ok := ca.PublicKey.(*ecdsa.PublicKey)
		if !ok {
			continue
		}
		for _, sig := range sigs {
			if ecdsa.VerifyASN1(pub, digest, sig) {
				return true
			}
		}
	}
	return false
}

// VerifyNode checks a node's certificate chain (leaf first, as sent in TLS) against s's CAs, as a
// server of the cluster, and returns the node it names: how the operator knows it talks to a node
// the cluster's CA enrolled.
func (s *Secret) VerifyNode(rawCerts [][]byte) (string, error) {
	id := &Identity{roots: x509.NewCertPool(), intermediates: x509.NewCertPool(), now: time.Now}
	for _, ca := range s.CAs {
		id.roots.AddCert(ca.Cert)
	}
	for _, c := range s.Cross {
		id.intermediates.AddCert(c)
	}
	return id.Verify(rawCerts, x509.ExtKeyUsageServerAuth)
}
