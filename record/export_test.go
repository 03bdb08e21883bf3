package record

// AppendShortDecimal exposes appendFloat's short path, so that a test can
// check both what it writes and which floats it takes.
var AppendShortDecimal = appendShortDecimal

// AppendInPlace and AppendLaidOut expose the two ways Obj.AppendJSON writes
// a changed object, so that a test can hold one against the other and check
// which objects the first takes.
func AppendInPlace(o *Obj, dst []byte) ([]byte, bool) { return o.appendInPlace(dst) }

func AppendLaidOut(o *Obj, dst []byte) []byte { return o.appendLaidOut(dst) }
