package cosmostest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strings"
)

// Effective partition keys (EPKs).
//
// The real service hashes partition key values with MurmurHash3 into a
// binary-encoded EPK. We do not reproduce that: epkOf uses SHA-256 of the
// value's JSON encoding, rendered as 32 uppercase hex digits. What matters to
// the protocol (and to the scaler) is only that EPKs are deterministic,
// ordered ordinally as strings, and fall inside the range bounds, which
// are uppercase hex strings with "" as the minimum and "FF" as the maximum.

const (
	epkMin    = ""
	epkMax    = "FF"
	epkDigits = 32 // hex digits of an EPK and of the arithmetic on bounds
)

// epkOf returns the EPK of a partition key value (nil = the value is missing).
func epkOf(pkValue any) string {
	b, _ := json.Marshal(pkValue)
	if pkValue == nil {
		b = []byte("undefined") // a missing value hashes differently from JSON null
	}
	sum := sha256.Sum256(b)
	// Keep every EPK below the "FF" maximum: an EPK starting with FF would sort
	// after it.
	if sum[0] == 0xFF {
		sum[0] = 0xFE
	}
	return strings.ToUpper(hex.EncodeToString(sum[:epkDigits/2]))
}

// epkToInt reads a bound or EPK as a 128-bit number, padding with zeros on
// the right, so "80" and "8000…0" are the same point. The "FF" maximum reads
// as FF00…0 like any other bound: the space is [0, FF00…0), so every bound an
// even split or a split's midpoint produces sorts below "FF" as a string too.
func epkToInt(s string) *big.Int {
	if len(s) > epkDigits {
		s = s[:epkDigits]
	}
	s += strings.Repeat("0", epkDigits-len(s))
	n, ok := new(big.Int).SetString(s, 16)
	if !ok {
		return new(big.Int)
	}
	return n
}

// intToBound renders a number as a bound, dropping trailing "00" bytes.
// For 32-digit EPKs the short form orders exactly like the long one.
func intToBound(n *big.Int) string {
	s := strings.ToUpper(n.Text(16))
	s = strings.Repeat("0", epkDigits-len(s)) + s
	for len(s) >= 2 && strings.HasSuffix(s, "00") {
		s = s[:len(s)-2]
	}
	return s
}

// evenBounds splits [min, max) into n ranges of equal width.
func evenBounds(n int) []string {
	lo, hi := epkToInt(epkMin), epkToInt(epkMax)
	width := new(big.Int).Sub(hi, lo)
	bounds := make([]string, n+1)
	bounds[0], bounds[n] = epkMin, epkMax
	for i := 1; i < n; i++ {
		p := new(big.Int).Mul(width, big.NewInt(int64(i)))
		p.Div(p, big.NewInt(int64(n)))
		bounds[i] = intToBound(p.Add(p, lo))
	}
	return bounds
}

// midpoint returns the bound halfway between lower and upper, or ok=false
// when the range is too narrow to split.
func midpoint(lower, upper string) (string, bool) {
	lo, hi := epkToInt(lower), epkToInt(upper)
	mid := new(big.Int).Add(lo, hi)
	mid.Rsh(mid, 1)
	if mid.Cmp(lo) <= 0 || mid.Cmp(hi) >= 0 {
		return "", false
	}
	b := intToBound(mid)
	if b <= lower || b >= upper {
		return "", false // e.g. [FE, FF): the midpoint's short form collides with "FF"
	}
	return b, true
}

// epkInRange reports lower <= epk < upper, compared ordinally as the SDKs do.
func epkInRange(epk, lower, upper string) bool {
	return epk >= lower && epk < upper
}
