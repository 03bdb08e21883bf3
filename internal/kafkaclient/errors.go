package kafkaclient

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Explain returns err with the Kafka error code in it spelled out: its name,
// its number and what it means, as in
//
//	UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member.
//
// so that a log line or an error says what the broker meant without a trip
// to the protocol's documentation. The result wraps err: errors.Is and
// errors.As see the *kerr.Error as before. err without a Kafka error code
// (and nil) is returned as it is.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var done *explained
	if errors.As(err, &done) {
		return err
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	return &explained{err: err, ke: ke}
}

// Describe spells out one Kafka error: "NAME (code): description".
func Describe(ke *kerr.Error) string {
	return fmt.Sprintf("%s (%d): %s", ke.Message, ke.Code, ke.Description)
}

// ForCode returns the error a Kafka response's error code stands for,
// spelled out as Explain does, or nil for code 0.
func ForCode(code int16) error {
	return Explain(kerr.ErrorForCode(code))
}

type explained struct {
	err error
	ke  *kerr.Error
}

func (e *explained) Error() string {
	s := e.err.Error()
	// franz-go's own text for the code is "NAME: description"; put the
	// number beside the name. An error that words the code otherwise gets
	// the whole description after it.
	if short := e.ke.Error(); strings.Contains(s, short) {
		return strings.Replace(s, short, Describe(e.ke), 1)
	}
	return s + " (" + Describe(e.ke) + ")"
}

func (e *explained) Unwrap() error { return e.err }

// Refused reports errors that no retry or rejoin can fix, because the cluster
// refuses this client what it asks (authorization) or who it is
// (authentication): a connector stops with them instead of logging the same
// refusal forever.
func Refused(err error) bool {
	for _, e := range []error{
		kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
		kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism,
		kerr.IllegalSaslState, kerr.InvalidGroupID,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// joined is a list of errors printed on one line, separated by "; ": several
// partitions' failures in one log line. errors.Is and errors.As see each.
type joined []error

func (j joined) Error() string {
	var sb strings.Builder
	for i, e := range j {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(e.Error())
	}
	return sb.String()
}

func (j joined) Unwrap() []error { return j }

// Join returns the non-nil errs as one error printed on one line, or nil if
// there are none.
func Join(errs ...error) error {
	var j joined
	for _, e := range errs {
		if e != nil {
			j = append(j, e)
		}
	}
	switch len(j) {
	case 0:
		return nil
	case 1:
		return j[0]
	}
	return j
}
