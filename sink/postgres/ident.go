package postgres

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxIdentLen is PostgreSQL's NAMEDATALEN-1: a longer name would be cut
// short by the server without a word, and then name something else.
const maxIdentLen = 63

// checkIdent reports why s cannot be a PostgreSQL name, or nil. Every name
// the sink puts into SQL is quoted (quoteIdent), so any character is allowed
// except the ones the server refuses in a name; quoting also means the name
// is taken exactly as written: Orders and orders are two tables.
func checkIdent(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty")
	case len(s) > maxIdentLen:
		return fmt.Errorf("%q is %d bytes long; PostgreSQL names are at most %d", s, len(s), maxIdentLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%q is not valid UTF-8", s)
	case strings.ContainsRune(s, 0):
		return fmt.Errorf("%q holds a NUL character", s)
	}
	return nil
}

// quoteIdent quotes a name for SQL: "name", with inner quotes doubled.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// qualified is a schema-qualified table name.
type qualified struct{ schema, name string }

// sql returns the quoted "schema"."name".
func (q qualified) sql() string { return quoteIdent(q.schema) + "." + quoteIdent(q.name) }

// String returns schema.name as the user wrote it, for messages.
func (q qualified) String() string { return q.schema + "." + q.name }

// parseQualified splits "schema.table" or "table" (in defSchema). A name that
// holds a dot itself cannot be given this way; such a table takes the
// separate schema option.
func parseQualified(s, defSchema string) (qualified, error) {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		q := qualified{s[:i], s[i+1:]}
		if err := checkIdent(q.schema); err != nil {
			return q, fmt.Errorf("schema part %w", err)
		}
		if err := checkIdent(q.name); err != nil {
			return q, fmt.Errorf("table part %w", err)
		}
		return q, nil
	}
	if err := checkIdent(s); err != nil {
		return qualified{}, err
	}
	return qualified{defSchema, s}, nil
}
