package record

import "math"

// Computed floats are most often a short decimal: an amount in cents
// divided by 100, a ratio rounded to a few places. For those, the shortest
// form strconv searches for is known in advance, and appendFloat writes it
// without the search.
//
// Why it is exact: if m is an integer with |m| < 10^15 and p = 10^k, both
// are exact float64s, and m/p is the float64 nearest the decimal m·10^-k
// (IEEE division rounds correctly). A decimal of at most 15 significant
// digits is the only one of that many digits or fewer whose nearest
// float64 is that float64 (15 digits always survive the round trip), so no
// shorter or closer decimal exists: m·10^-k is the shortest form. At the
// smallest such k, m has no trailing zero (m/10 would have matched at k-1),
// so written with k decimals it is exactly the text strconv gives.

// shortDecimals is the most decimals the short form is tried with: each
// costs a multiplication and a division, which a float of no short
// decimal form pays before strconv's search.
const shortDecimals = 4

var (
	pow10f = [shortDecimals + 1]float64{1, 1e1, 1e2, 1e3, 1e4}
	pow10i = [shortDecimals + 1]int64{1, 1e1, 1e2, 1e3, 1e4}
)

// appendShortDecimal appends f as appendFloat writes it and reports true
// when f is the float64 nearest a decimal m·10^-k with |m| < 10^15 and
// k ≤ shortDecimals; otherwise it appends nothing and reports false. Zero
// is left to strconv, which writes -0 as "-0".
func appendShortDecimal(dst []byte, f float64) ([]byte, bool) {
	start := len(dst)
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	if f == 0 {
		return dst, false
	}
	for k, p := range pow10f {
		t := f * p
		if !(t < 1e15) { // also NaN
			break
		}
		m := math.RoundToEven(t)
		if m/p == f {
			return appendDecimal(dst, int64(m), k), true
		}
	}
	return dst[:start], false
}

// appendDecimal appends m·10^-k, m ≥ 0, with exactly k decimals.
func appendDecimal(dst []byte, m int64, k int) []byte {
	var buf [24]byte // 15 digits and a point at most
	i := len(buf)
	if k > 0 {
		frac := m % pow10i[k]
		m /= pow10i[k]
		for range k {
			i--
			buf[i] = byte('0' + frac%10)
			frac /= 10
		}
		i--
		buf[i] = '.'
	}
	for {
		i--
		buf[i] = byte('0' + m%10)
		m /= 10
		if m == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}
