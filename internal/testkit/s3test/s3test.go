// Package s3test helps test weir's S3 connectors against a real server: it
// reads the server's address and credentials from the environment that
// `.ci/s3.sh env` prints, and gives each test a bucket of its own.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// EndpointEnv is the variable `bash .ci/s3.sh env` prints the server's URL
// in (with AWS_ENDPOINT_URL_S3, AWS_REGION and the credentials).
const EndpointEnv = "WEIR_S3_ENDPOINT"

// Endpoint returns the server's URL and skips the test when it is unset:
// start a server with `bash .ci/s3.sh start` and `eval "$(bash .ci/s3.sh env)"`.
func Endpoint(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EndpointEnv)
	if u == "" {
		t.Skipf(`%s is not set; start a server with bash .ci/s3.sh start and eval "$(bash .ci/s3.sh env)"`, EndpointEnv)
	}
	return u
}

// Client returns a client of the server at endpoint, path-style, with the
// credentials of the environment.
func Client(t testing.TB, endpoint string) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// Bucket creates a bucket named after the test, with a random suffix, and
// removes it with everything in it when the test ends (unless it failed and
// WEIR_S3_KEEP is set, to look at it).
func Bucket(t testing.TB, cl *s3.Client) string {
	t.Helper()
	var b strings.Builder
	for _, c := range strings.ToLower(t.Name()) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	var id [4]byte
	rand.Read(id[:])
	name = strings.Trim(name, "-") + "-" + hex.EncodeToString(id[:])
	ctx := context.Background()
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("WEIR_S3_KEEP") != "" {
			t.Logf("bucket %s kept", name)
			return
		}
		Empty(t, cl, name)
		cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &name})
	})
	return name
}

// Empty deletes every object and aborts every upload of bucket.
func Empty(t testing.TB, cl *s3.Client, bucket string) {
	ctx := context.Background()
	for _, u := range Uploads(t, cl, bucket, "") {
		cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &u.Key, UploadId: &u.ID})
	}
	for _, k := range Keys(t, cl, bucket, "") {
		cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(k)})
	}
}

// Put writes an object.
func Put(t testing.TB, cl *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("putting %s: %v", key, err)
	}
}

// Get reads an object.
func Get(t testing.TB, cl *s3.Client, bucket, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
	return b
}

// Keys lists the keys under prefix, sorted.
func Keys(t testing.TB, cl *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("listing %s: %v", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	slices.Sort(out)
	return out
}

// Upload is a multipart upload in progress.
type Upload struct{ Key, ID string }

// Uploads lists the multipart uploads in progress under prefix.
func Uploads(t testing.TB, cl *s3.Client, bucket, prefix string) []Upload {
	t.Helper()
	var out []Upload
	in := &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix}
	for {
		page, err := cl.ListMultipartUploads(context.Background(), in)
		if err != nil {
			t.Fatalf("listing uploads under %s: %v", prefix, err)
		}
		for _, u := range page.Uploads {
			out = append(out, Upload{aws.ToString(u.Key), aws.ToString(u.UploadId)})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

// StartUpload starts a multipart upload and uploads one part, leaving it in
// progress: what a crashed writer leaves.
func StartUpload(t testing.TB, cl *s3.Client, bucket, key string) Upload {
	t.Helper()
	ctx := context.Background()
	out, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: out.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("left behind"))}); err != nil {
		t.Fatal(err)
	}
	return Upload{key, aws.ToString(out.UploadId)}
}
