package keyresolver

import "math/big"

// Curve constants for checking that 32 bytes encode a point on edwards25519 (RFC 8032 §5.1.3).
// crypto/ed25519 does not expose point decoding, and this check runs once per key registration,
// so plain math/big is fast enough and avoids another dependency.
var (
	curveP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	curveD = func() *big.Int {
		num := big.NewInt(-121665)
		den := new(big.Int).ModInverse(big.NewInt(121666), curveP)
		d := new(big.Int).Mul(num, den)
		return d.Mod(d, curveP)
	}()
	legendreExp = new(big.Int).Rsh(new(big.Int).Sub(curveP, big.NewInt(1)), 1)
)

// ValidEd25519Point reports whether pub is the canonical encoding of a point on edwards25519.
func ValidEd25519Point(pub []byte) bool {
	if len(pub) != 32 {
		return false
	}
	le := make([]byte, 32)
	copy(le, pub)
	sign := le[31] >> 7
	le[31] &= 0x7f
	be := make([]byte, 32)
	for i := range le {
		be[31-i] = le[i]
	}
	y := new(big.Int).SetBytes(be)
	if y.Cmp(curveP) >= 0 {
		return false
	}
	y2 := new(big.Int).Mul(y, y)
	y2.Mod(y2, curveP)
	u := new(big.Int).Sub(y2, big.NewInt(1)) // y² − 1
	u.Mod(u, curveP)
	v := new(big.Int).Mul(curveD, y2) // d·y² + 1
	v.Add(v, big.NewInt(1))
	v.Mod(v, curveP)
	if v.Sign() == 0 {
		return false
	}
	x2 := new(big.Int).Mul(u, new(big.Int).ModInverse(v, curveP))
	x2.Mod(x2, curveP)
	if x2.Sign() == 0 {
		return sign == 0 // x = 0 has no negative encoding
	}
	return new(big.Int).Exp(x2, legendreExp, curveP).Cmp(big.NewInt(1)) == 0
}
