package s3client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/weir-etl/weir/internal/reach"
)

// Code returns the S3 error code of err ("NoSuchKey", "PreconditionFailed",
// "AccessDenied"), or "" when err is not an answer of the server.
func Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// Refused reports whether err is an answer no retry changes: the server
// refused the credentials or the request, the bucket does not exist, or TLS
// failed in a way no wait fixes (reach.TLSRefused: a certificate refused,
// an https:// endpoint that speaks plain HTTP).
func Refused(err error) bool {
	if noCredentials(err) || reach.TLSRefused(err) {
		return true
	}
	switch Code(err) {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket", "InvalidBucketName",
		"AuthorizationHeaderMalformed", "InvalidToken", "ExpiredToken", "Forbidden", "NotFound", "PermanentRedirect", "AllAccessDisabled":
		return true
	}
	return false
}

// noCredentials reports whether err is the SDK finding no credentials: its
// signing step wraps the credential chain's failure as "get identity".
func noCredentials(err error) bool {
	return err != nil && Code(err) == "" && strings.Contains(err.Error(), "get identity: ")
}

// NotFound reports whether err says the key (or upload) does not exist.
func NotFound(err error) bool {
	switch Code(err) {
	case "NoSuchKey", "NotFound", "NoSuchUpload":
		return true
	}
	return false
}

// Explain returns err with what it means for the user in front of it, for
// the answers whose codes say little by themselves. It never adds a
// credential: the SDK's errors hold none.
func Explain(err error) error {
	var hint string
	switch Code(err) {
	case "InvalidAccessKeyId":
		hint = "the server does not know the access key id: check the credentials (the AWS default chain, or access_key_id_env)"
	case "SignatureDoesNotMatch":
		hint = "the secret key is wrong for this access key id: check the credentials"
	case "Forbidden":
		hint = "the server refused the request (a HEAD's answer says no more): check the access key id and secret, and that they may list the bucket"
	case "AccessDenied":
		hint = "the credentials may not do this: grant them s3:ListBucket, s3:GetObject, s3:PutObject, s3:DeleteObject, s3:ListBucketMultipartUploads and s3:AbortMultipartUpload on the bucket"
	case "NoSuchBucket", "NotFound":
		hint = "the bucket does not exist: create it, or fix bucket"
	case "PermanentRedirect", "AuthorizationHeaderMalformed":
		hint = "the bucket is in another region: set region to the bucket's"
	}
	switch {
	case reach.PlainHTTP(err):
		hint = "the endpoint speaks plain HTTP: write it with http://, or give the server TLS"
	case reach.TLSRefused(err):
		hint = "TLS failed on a certificate or a port that does not speak TLS: check endpoint's scheme and port, and that the system trusts the server's certificate"
	}
	if noCredentials(err) {
		hint = "no credentials: the AWS default chain found none; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, or access_key_id_env and secret_access_key_env"
	}
	var ne net.Error
	switch {
	case hint != "":
		return fmt.Errorf("%w (%s)", err, hint)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (no answer within request_timeout: the server may be stopped or overloaded)", err)
	case errors.As(err, &ne), strings.Contains(err.Error(), "connection refused"):
		return fmt.Errorf("%w (the server cannot be reached: check endpoint, and that it is up)", err)
	}
	return err
}
