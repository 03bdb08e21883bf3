package connector

import (
	"errors"
	"fmt"
)

// FieldError is a problem with one option of a connector's configuration.
// A configuration's Validate method returns one, or several joined with
// errors.Join, so that every problem is reported at once, each at the line of
// its own option.
type FieldError struct {
	// Field is the option's path below the component, in YAML names:
	// "paths", "paths[2]", "tls.ca_file". Empty means the component as a whole.
	Field string
	// Msg says what is wrong and how to fix it ("must be positive, e.g. 250ms").
	Msg string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Fieldf returns a *FieldError for field with a formatted message.
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// FieldErrors returns every *FieldError in err (joined errors are walked) and
// the errors that are not field errors.
func FieldErrors(err error) (fields []*FieldError, other []error) {
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe)
			return
		}
		other = append(other, e)
	}
	walk(err)
	return fields, other
}
