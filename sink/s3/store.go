package s3

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/weir-etl/weir/internal/s3client"
)

// store is the bucket as the sink uses it: seven requests. s3store is the
// real one; the unit tests' fake keeps objects and uploads in memory and
// fails any step on demand.
type store interface {
	create(ctx context.Context, key string, meta map[string]string) (uploadID string, err error)
	uploadPart(ctx context.Context, key, uploadID string, n int32, body []byte) (etag string, err error)
	complete(ctx context.Context, key, uploadID string, parts []part) error
	abortUpload(ctx context.Context, key, uploadID string) error
	listUploads(ctx context.Context, prefix string) ([]upload, error)
	// get returns errNotFound for a key that does not exist.
	get(ctx context.Context, key string) (body []byte, etag string, err error)
	// put writes key if it still has the ETag ifMatch ("": if it does not
	// exist), when conditional; it returns errPrecondition if not.
	put(ctx context.Context, key string, body []byte, ifMatch string, conditional bool) (etag string, err error)
	exists(ctx context.Context, key string) (bool, error)
}

// upload is a multipart upload in progress.
type upload struct{ key, id string }

var (
	errNotFound     = errors.New("not found")
	errPrecondition = errors.New("the object changed (PreconditionFailed)")
)

// s3store is a store on an S3 server. Each request is bounded by
// request_timeout.
type s3store struct {
	cl       *s3.Client
	conn     *s3client.Conn
	bucket   string
	sse, kms string
}

func (st *s3store) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case s3client.NotFound(err):
		return errors.Join(errNotFound, err)
	case s3client.Code(err) == "PreconditionFailed" || s3client.Code(err) == "ConditionalRequestConflict":
		return errors.Join(errPrecondition, err)
	}
	return s3client.Explain(err)
}

func (st *s3store) create(ctx context.Context, key string, meta map[string]string) (string, error) {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	in := &s3.CreateMultipartUploadInput{Bucket: &st.bucket, Key: &key, Metadata: meta}
	st.encrypt(&in.ServerSideEncryption, &in.SSEKMSKeyId)
	out, err := st.cl.CreateMultipartUpload(ctx, in)
	if err != nil {
		return "", st.wrap(err)
	}
	return aws.ToString(out.UploadId), nil
}

func (st *s3store) encrypt(sse *types.ServerSideEncryption, kms **string) {
	switch st.sse {
	case "AES256":
		*sse = types.ServerSideEncryptionAes256
	case "aws:kms":
		*sse = types.ServerSideEncryptionAwsKms
		if st.kms != "" {
			*kms = aws.String(st.kms)
		}
	}
}

func (st *s3store) uploadPart(ctx context.Context, key, id string, n int32, body []byte) (string, error) {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	out, err := st.cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: &st.bucket, Key: &key, UploadId: &id, PartNumber: &n,
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return "", st.wrap(err)
	}
	return aws.ToString(out.ETag), nil
}

func (st *s3store) complete(ctx context.Context, key, id string, parts []part) error {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	cp := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.N), ETag: aws.String(p.ETag)}
	}
	_, err := st.cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &st.bucket, Key: &key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}})
	return st.wrap(err)
}

func (st *s3store) abortUpload(ctx context.Context, key, id string) error {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	_, err := st.cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &st.bucket, Key: &key, UploadId: &id})
	return st.wrap(err)
}

func (st *s3store) listUploads(ctx context.Context, prefix string) ([]upload, error) {
	var out []upload
	in := &s3.ListMultipartUploadsInput{Bucket: &st.bucket, Prefix: &prefix}
	for {
		rctx, cancel := st.conn.Timeout(ctx)
		page, err := st.cl.ListMultipartUploads(rctx, in)
		cancel()
		if err != nil {
			return nil, st.wrap(err)
		}
		for _, u := range page.Uploads {
			out = append(out, upload{key: aws.ToString(u.Key), id: aws.ToString(u.UploadId)})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

func (st *s3store) get(ctx context.Context, key string) ([]byte, string, error) {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	out, err := st.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &st.bucket, Key: &key})
	if err != nil {
		return nil, "", st.wrap(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", s3client.Explain(err)
	}
	return b, aws.ToString(out.ETag), nil
}

func (st *s3store) put(ctx context.Context, key string, body []byte, ifMatch string, conditional bool) (string, error) {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	in := &s3.PutObjectInput{Bucket: &st.bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentType: aws.String("application/json")}
	if conditional {
		if ifMatch != "" {
			in.IfMatch = aws.String(ifMatch)
		} else {
			in.IfNoneMatch = aws.String("*")
		}
	}
	st.encrypt(&in.ServerSideEncryption, &in.SSEKMSKeyId)
	out, err := st.cl.PutObject(ctx, in)
	if err != nil {
		return "", st.wrap(err)
	}
	return aws.ToString(out.ETag), nil
}

func (st *s3store) exists(ctx context.Context, key string) (bool, error) {
	ctx, cancel := st.conn.Timeout(ctx)
	defer cancel()
	_, err := st.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &st.bucket, Key: &key})
	switch {
	case err == nil:
		return true, nil
	case s3client.NotFound(err):
		return false, nil
	}
	return false, st.wrap(err)
}
