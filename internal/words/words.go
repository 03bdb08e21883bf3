// Package words writes counts in messages as English does: "1 record",
// "2 records", "0 records".
package words

import "strconv"

// Count returns n and the noun: one when n is 1 or -1, else many
// ("batch", "batches").
func Count[N ~int | ~int32 | ~int64](n N, one, many string) string {
	noun := many
	if n == 1 || n == -1 {
		noun = one
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun
}

// Plural returns Count with the plural made by adding "s" ("record",
// "records"), which is every noun weir counts but a few (batch, entry,
// byte's "bytes" is regular).
func Plural[N ~int | ~int32 | ~int64](n N, noun string) string {
	return Count(n, noun, noun+"s")
}
