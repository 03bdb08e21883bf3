package s3client

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

// A clock that moves only when the waiter sleeps.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return nil
}

// The wait at start retries what may pass (no answer, refused connections)
// until connect_timeout, with backoff, and fails at once on an answer no
// retry changes (bad credentials, no credentials at all, a missing bucket),
// naming the bucket and the fix.
func TestWait(t *testing.T) {
	c := DefaultConn()
	c.Bucket, c.Endpoint, c.ConnectTimeout = "lake", "http://127.0.0.1:1", 10*time.Second
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
		want     string
	}{
		{"unreachable", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), 0, "did not answer within connect_timeout"},
		{"bad key", &smithy.GenericAPIError{Code: "InvalidAccessKeyId"}, 1, "does not know the access key id"},
		{"no bucket", &smithy.GenericAPIError{Code: "NoSuchBucket"}, 1, "create it, or fix bucket"},
		{"no credentials", errors.New("operation error S3: HeadBucket, get identity: get credentials: failed to refresh cached credentials"), 1, "no credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(0, 0)}
			n := 0
			err := wait(context.Background(), func(context.Context) error { n++; return tc.err }, &c, "sink lake", slog.New(slog.DiscardHandler), clk.Now, clk.Sleep)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bucket lake") {
				t.Fatalf("wait = %v, want an error naming the bucket and %q", err, tc.want)
			}
			if tc.attempts > 0 && n != tc.attempts {
				t.Fatalf("%d attempts, want %d: an answer no retry changes ends the wait", n, tc.attempts)
			}
			if tc.attempts == 0 && n < 3 {
				t.Fatalf("%d attempts within connect_timeout, want several", n)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	c := DefaultConn()
	c.Endpoint, c.Addressing, c.AccessKeyIDEnv = "ftp://x", "sideways", "KEY"
	err := c.Validate()
	for _, want := range []string{"bucket", "endpoint", "addressing", "secret_access_key_env"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want a problem with %s", err, want)
		}
	}
}

func TestCheckNamesUnsetVariables(t *testing.T) {
	c := DefaultConn()
	c.AccessKeyIDEnv, c.SecretAccessKeyEnv = "WEIR_TEST_UNSET_KEY", "WEIR_TEST_SET_SECRET"
	t.Setenv("WEIR_TEST_SET_SECRET", "x")
	err := c.Check()
	if err == nil || !strings.Contains(err.Error(), "access_key_id_env") || strings.Contains(err.Error(), "secret_access_key_env") {
		t.Fatalf("Check = %v, want access_key_id_env alone named", err)
	}
}

// An https:// endpoint whose server speaks plain HTTP is refused at the
// first attempt with the fix, not retried until connect_timeout: waiting
// does not change a port's protocol (nor a certificate).
func TestWaitTLSToAPlainServerFailsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "weir-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "weir-test-secret")
	c := DefaultConn()
	c.Bucket, c.Region, c.ConnectTimeout = "lake", "us-east-1", 20*time.Second
	c.Endpoint = strings.Replace(srv.URL, "http://", "https://", 1)
	cl, err := c.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = Wait(context.Background(), cl, &c, "sink lake", slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "write it with http://") || strings.Contains(err.Error(), "connect_timeout") {
		t.Fatalf("Wait = %v; want the plain-HTTP refusal with its fix at once", err)
	}
}
