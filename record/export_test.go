package record

// AppendShortDecimal exposes appendFloat's short path, so that a test can
// check both what it writes and which floats it takes.
var AppendShortDecimal = appendShortDecimal
