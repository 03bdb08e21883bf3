//go:build integration

package iceberg

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// s3Bucket creates a bucket of the test's own on the S3 server that
// `.ci/s3.sh env` names, or skips the test when none is configured.
func s3Bucket(t *testing.T) string {
	t.Helper()
	endpoint := os.Getenv("WEIR_S3_ENDPOINT")
	if endpoint == "" {
		t.Skip("no S3 server: bash .ci/s3.sh start && eval \"$(bash .ci/s3.sh env)\"")
	}
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
	bucket := fmt.Sprintf("weir-iceberg-%d", time.Now().UnixNano())
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	return bucket
}

// A warehouse on S3 (versitygw here): the sink writes its data files and
// metadata there, a SQLite catalog points at them, and pyiceberg reads the
// rows back from the server. A crash after the files were written leaves
// objects the next start's clean-up deletes.
func TestS3Warehouse(t *testing.T) {
	bucket := s3Bucket(t)
	ctx := context.Background()
	dir := t.TempDir()
	cfg := sqliteConfig(dir, "s3t", Column{Name: "id", Type: "long", Required: true}, Column{Name: "doc", Value: true})
	cfg.Catalog.Warehouse = "s3://" + bucket + "/wh"
	cfg.S3 = S3{Endpoint: os.Getenv("WEIR_S3_ENDPOINT"), PathStyle: true}
	s := openSink(t, cfg)
	write := func(s *Sink, from, to int) error {
		var recs []record.Record
		for i := from; i < to; i++ {
			r := record.New(fmt.Appendf(nil, `{"id":%d}`, i))
			r.Origin = record.Origin{Source: "in", Partition: "p", Offset: int64(i)}
			recs = append(recs, r)
		}
		if err := s.Write(ctx, recs); err != nil {
			return err
		}
		s.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: connector.Position(to)}})
		return s.Flush(ctx)
	}
	if err := write(s, 0, 100); err != nil {
		t.Fatal(err)
	}
	s.hook = func(step string) error {
		if step == stepFilesWritten {
			return errCrash
		}
		return nil
	}
	if err := write(s, 100, 150); err == nil {
		t.Fatal("the commit did not stop")
	}
	s.release()
	s2 := openSink(t, cfg)
	if s2.orphans.Load() != 1 {
		t.Fatalf("the clean-up deleted %d files, want the 1 the crash left", s2.orphans.Load())
	}
	if err := write(s2, 100, 150); err != nil {
		t.Fatal(err)
	}
	tbl := loadTable(t, cfg)
	if !strings.HasPrefix(tbl.Location(), "s3://"+bucket+"/wh/") {
		t.Fatalf("table location %s is not in the bucket", tbl.Location())
	}
	rows := readRows(t, cfg, "pyiceberg")
	if len(rows) != 150 {
		t.Fatalf("pyiceberg read %d rows, want 150", len(rows))
	}
	if n := len(slices.Compact(rows)); n != 150 {
		t.Fatalf("pyiceberg read %d distinct rows, want 150", n)
	}
}
