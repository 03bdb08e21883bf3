// Package s3client is what weir's S3 source and sink share: how they reach
// a bucket (the Conn options: bucket, endpoint, region, addressing,
// credentials, timeouts), their validation, the aws-sdk-go-v2 client made
// from them, the wait for the server at start, the timeouts of single
// requests, and S3 error codes spelled out for people. Both connectors embed
// Conn, so they are configured alike, and neither imports the other.
//
// Credentials come from the AWS default chain (environment, shared config
// and credentials files with a profile, web identity, container and instance
// metadata) unless the configuration names the environment variables that
// hold them. A credential is never put in a log line or an error: the
// configuration holds only variable names and a profile name.
//
// Its errors carry the prefix "s3:", the users' name for both connectors.
package s3client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/weir-etl/weir/connector"
)

// Defaults.
const (
	// DefaultConnectTimeout is how long a connector waits at start for the
	// server to answer: long enough to ride out a restart, short enough that
	// a wrong endpoint ends the run in minutes. Kafka's is the same.
	DefaultConnectTimeout = 5 * time.Minute
	// DefaultRequestTimeout bounds one request (one attempt): a server that
	// takes a connection and never answers must not hold the connector.
	DefaultRequestTimeout = time.Minute
)

// Conn is how an S3 connector reaches its bucket. Both S3 connectors embed
// it inline, so its options sit beside theirs in the configuration.
type Conn struct {
	// Bucket is the bucket's name.
	Bucket string `yaml:"bucket" doc:"The bucket's name (it must exist)."`
	// Endpoint is the URL of an S3-compatible server.
	Endpoint string `yaml:"endpoint" doc:"URL of an S3-compatible server (MinIO, Ceph, R2, versitygw), e.g. http://127.0.0.1:7070. Empty: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL if set, else AWS's own endpoint for region."`
	// Region is the bucket's region.
	Region string `yaml:"region" doc:"The bucket's region. Empty: from the AWS configuration (AWS_REGION, the profile); us-east-1 if none names one."`
	// Addressing is path or virtual_host, or auto.
	Addressing string `yaml:"addressing" enum:"auto,path,virtual_host" doc:"How requests name the bucket: virtual_host (bucket.host/key, AWS's way), path (host/bucket/key, what most self-hosted servers need) or auto (path when an endpoint is given, virtual_host for AWS)."`
	// Profile is a profile of the shared AWS configuration files.
	Profile string `yaml:"profile" doc:"A profile of the shared AWS configuration and credentials files (AWS_PROFILE otherwise)."`
	// AccessKeyIDEnv and the others name environment variables that hold
	// the credentials, overriding the default chain.
	AccessKeyIDEnv     string `yaml:"access_key_id_env" doc:"The name of an environment variable holding the access key id, to use instead of the AWS default credential chain (environment, shared files, web identity, instance metadata). Needs secret_access_key_env."`
	SecretAccessKeyEnv string `yaml:"secret_access_key_env" doc:"The name of the environment variable holding the secret access key, with access_key_id_env. The secret is never logged."`
	SessionTokenEnv    string `yaml:"session_token_env" doc:"The name of an environment variable holding a session token, for temporary credentials given by access_key_id_env."`
	// ConnectTimeout is how long Open waits for the server at start.
	ConnectTimeout time.Duration `yaml:"connect_timeout" doc:"How long the connector waits at start for the server to answer, retrying with backoff and logging each failure (WARN), before it fails. Bad credentials or a missing bucket fail at once."`
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration `yaml:"request_timeout" doc:"The longest one request may take (one attempt; a part upload or a range read included) before it is given up and retried: a server that stops answering is noticed within it."`
}

// DefaultConn returns the connection defaults both connectors start from.
func DefaultConn() Conn {
	return Conn{Addressing: "auto", ConnectTimeout: DefaultConnectTimeout, RequestTimeout: DefaultRequestTimeout}
}

// Validate reports every problem with c at once, as *connector.FieldError
// values joined with errors.Join, each naming its option and the fix.
func (c *Conn) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if c.Bucket == "" {
		bad("bucket", "is empty: name the bucket, e.g. bucket: my-lake")
	} else if strings.ContainsAny(c.Bucket, "/ ") {
		bad("bucket", "%q is not a bucket name: give the name alone, and the folder in prefix", c.Bucket)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("endpoint", "%q is not an http:// or https:// URL, e.g. endpoint: http://127.0.0.1:7070", c.Endpoint)
		}
	}
	switch c.Addressing {
	case "auto", "path", "virtual_host":
	default:
		bad("addressing", "%q is unknown: use auto, path or virtual_host", c.Addressing)
	}
	switch {
	case c.AccessKeyIDEnv != "" && c.SecretAccessKeyEnv == "":
		bad("secret_access_key_env", "is empty while access_key_id_env is set: name the variable holding the secret key too")
	case c.AccessKeyIDEnv == "" && c.SecretAccessKeyEnv != "":
		bad("access_key_id_env", "is empty while secret_access_key_env is set: name the variable holding the access key id too")
	case c.AccessKeyIDEnv == "" && c.SessionTokenEnv != "":
		bad("session_token_env", "is set without access_key_id_env: a session token goes with explicit keys")
	}
	if c.ConnectTimeout < time.Second {
		bad("connect_timeout", "%v is too short: use at least 1s (the default is %v)", c.ConnectTimeout, DefaultConnectTimeout)
	}
	if c.RequestTimeout < time.Second {
		bad("request_timeout", "%v is too short: use at least 1s (the default is %v)", c.RequestTimeout, DefaultRequestTimeout)
	}
	return errors.Join(errs...)
}

// Where names the bucket and endpoint for log lines and errors.
func (c *Conn) Where() string {
	if c.Endpoint != "" {
		return fmt.Sprintf("bucket %s at %s", c.Bucket, c.Endpoint)
	}
	return "bucket " + c.Bucket
}

// Client returns an S3 client for c. Explicit credentials are read from
// their variables here, so a variable that is unset is reported when the
// connector opens, by name.
func (c *Conn) Client(ctx context.Context) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	if c.AccessKeyIDEnv != "" {
		id, secret := os.Getenv(c.AccessKeyIDEnv), os.Getenv(c.SecretAccessKeyEnv)
		if id == "" || secret == "" {
			unset := c.AccessKeyIDEnv
			if id != "" {
				unset = c.SecretAccessKeyEnv
			}
			return nil, fmt.Errorf("s3: the variable %s (named by the configuration's credentials) is unset or empty", unset)
		}
		token := ""
		if c.SessionTokenEnv != "" {
			token = os.Getenv(c.SessionTokenEnv)
		}
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, token)))
	}
	// The SDK retries a request a few times with its own backoff; the
	// connectors retry beyond that at their own level, so a long outage is
	// waited out there, visibly, rather than inside one call.
	opts = append(opts, config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = 2 * time.Second })
	}))
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := c.Endpoint
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		switch c.Addressing {
		case "path":
			o.UsePathStyle = true
		case "auto":
			o.UsePathStyle = endpoint != "" || o.BaseEndpoint != nil
		}
		// Checksums only when an operation requires them: servers other
		// than AWS do not all take the newer trailing checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}
