package file

import (
	"errors"
	"fmt"
)

// splitCSV splits one CSV line into fields, appending them to dst. It follows
// RFC 4180 within a line: fields may be quoted, and "" inside quotes is a
// quote. A quoted field cannot span lines, because the source frames records
// by line (a commit position must fall between records).
func splitCSV(dst []string, line []byte, delim byte) ([]string, error) {
	i := 0
	for {
		if i < len(line) && line[i] == '"' {
			// Quoted field.
			var b []byte
			i++
			for {
				j := i
				for j < len(line) && line[j] != '"' {
					j++
				}
				if j == len(line) {
					return dst, errors.New("unterminated quoted field (quoted fields cannot contain line breaks)")
				}
				b = append(b, line[i:j]...)
				if j+1 < len(line) && line[j+1] == '"' {
					b = append(b, '"')
					i = j + 2
					continue
				}
				i = j + 1
				break
			}
			dst = append(dst, string(b))
			if i == len(line) {
				return dst, nil
			}
			if line[i] != delim {
				return dst, fmt.Errorf("unexpected %q after quoted field at column %d", line[i], len(dst))
			}
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != delim {
			if line[j] == '"' {
				return dst, fmt.Errorf("bare quote in unquoted field at column %d", len(dst)+1)
			}
			j++
		}
		dst = append(dst, string(line[i:j]))
		if j == len(line) {
			return dst, nil
		}
		i = j + 1
	}
}
