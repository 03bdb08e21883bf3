package lang

import "math"

// The integer arithmetic of expressions, checked, for both the generic
// operators (ops.go) and the fast paths (fast.go): ok is false when the
// result does not fit int64, where Go would wrap silently. Each is small
// enough to be inlined. (% needs no check: Go defines MinInt64 % -1 as 0,
// and a modulo by zero is refused before it.)

func addInt(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

func subInt(a, b int64) (int64, bool) {
	d := a - b
	return d, (a^b)&(a^d) >= 0
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

func negInt(a int64) (int64, bool) { return -a, a != math.MinInt64 }
