package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultPartSize is the multipart part size used for streams of unknown
// length when S3Config.PartSize is zero. Without it minio-go sizes parts
// for the 5 TiB maximum and allocates buffers of about 537 MiB per put.
// With 16 MiB parts one streamed object can reach 156 GiB (10,000 parts).
const DefaultPartSize uint64 = 16 << 20

// minPartSize is the S3 minimum part size.
const minPartSize uint64 = 5 << 20

// DefaultRegion is used when S3Config.Region is empty; setting a region
// spares minio-go a bucket-location lookup.
const DefaultRegion = "us-east-1"

// S3Config configures NewS3.
type S3Config struct {
	// Endpoint is host[:port] ("minio:9000", "s3.amazonaws.com"). A
	// "http://" or "https://" prefix is accepted and decides Secure.
	Endpoint string
	// Bucket holds every object.
	Bucket string
	// Region; empty means DefaultRegion.
	Region string
	// AccessKey and SecretKey are static credentials.
	AccessKey string
	// SecretKey pairs with AccessKey.
	SecretKey string
	// Secure selects HTTPS.
	Secure bool
	// CreateBucket creates Bucket when it does not exist; otherwise NewS3
	// fails with ErrBucketNotFound.
	CreateBucket bool
	// PartSize is the multipart part size for streams of unknown length,
	// at least 5 MiB; zero means DefaultPartSize. One buffer of this size
	// is held per streaming put.
	PartSize uint64
	// Transport replaces minio-go's default HTTP transport (custom CAs,
	// proxies); nil keeps the default.
	Transport http.RoundTripper
}

// S3ConfigFromEnv reads an S3Config from environment variables through
// getenv (pass os.Getenv). prefix is prepended to each name; empty means
// "VFX_S3_", giving VFX_S3_ENDPOINT, VFX_S3_BUCKET, VFX_S3_REGION,
// VFX_S3_ACCESS_KEY, VFX_S3_SECRET_KEY, VFX_S3_SECURE (a strconv.ParseBool
// value), and the optional VFX_S3_CREATE_BUCKET (bool) and VFX_S3_PART_SIZE
// (bytes). ENDPOINT and BUCKET are required; a malformed boolean or number
// is an error.
func S3ConfigFromEnv(prefix string, getenv func(string) string) (S3Config, error) {
	if prefix == "" {
		prefix = "VFX_S3_"
	}
	get := func(name string) string { return strings.TrimSpace(getenv(prefix + name)) }
	cfg := S3Config{
		Endpoint:  get("ENDPOINT"),
		Bucket:    get("BUCKET"),
		Region:    get("REGION"),
		AccessKey: get("ACCESS_KEY"),
		SecretKey: getenv(prefix + "SECRET_KEY"),
	}
	boolVar := func(name string, dst *bool) error {
		v := get(name)
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("store: %s%s=%q: not a boolean", prefix, name, v)
		}
		*dst = b
		return nil
	}
	if err := boolVar("SECURE", &cfg.Secure); err != nil {
		return S3Config{}, err
	}
	if err := boolVar("CREATE_BUCKET", &cfg.CreateBucket); err != nil {
		return S3Config{}, err
	}
	if v := get("PART_SIZE"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return S3Config{}, fmt.Errorf("store: %sPART_SIZE=%q: not a byte count", prefix, v)
		}
		cfg.PartSize = n
	}
	if cfg.Endpoint == "" {
		return S3Config{}, fmt.Errorf("store: %sENDPOINT is not set", prefix)
	}
	if cfg.Bucket == "" {
		return S3Config{}, fmt.Errorf("store: %sBUCKET is not set", prefix)
	}
	return cfg, nil
}

// S3 is a Store in one bucket of an S3-compatible service (AWS S3, MinIO).
type S3 struct {
	client   *minio.Client
	bucket   string
	partSize uint64
}

var _ Store = (*S3)(nil)

// NewS3 connects to cfg.Endpoint, checks that cfg.Bucket exists and,
// when cfg.CreateBucket is set, creates it. ctx bounds those requests.
// Errors: a bad config, ErrBucketNotFound, or the service's error.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	endpoint, secure := cfg.Endpoint, cfg.Secure
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("store: s3: bad endpoint %q", cfg.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	if endpoint == "" {
		return nil, errors.New("store: s3: empty endpoint")
	}
	if cfg.Bucket == "" {
		return nil, errors.New("store: s3: empty bucket")
	}
	partSize := cfg.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < minPartSize {
		return nil, fmt.Errorf("store: s3: part size %d below the 5 MiB minimum", partSize)
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:    secure,
		Region:    region,
		Transport: cfg.Transport,
	})
	if err != nil {
		return nil, fmt.Errorf("store: s3: client: %w", err)
	}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("store: s3: bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		if !cfg.CreateBucket {
			return nil, fmt.Errorf("store: s3: bucket %s: %w", cfg.Bucket, ErrBucketNotFound)
		}
		if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: region}); err != nil {
			code := minio.ToErrorResponse(err).Code
			if code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("store: s3: create bucket %s: %w", cfg.Bucket, err)
			}
		}
	}
	return &S3{client: client, bucket: cfg.Bucket, partSize: partSize}, nil
}

// Put implements Store. A known size is uploaded as one PUT or as
// multipart parts chosen by minio-go; an unknown size (-1) streams in
// parts of the configured PartSize, holding one part in memory. S3 makes
// the object visible only when the upload completes.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	ct, err := normContentType(contentType)
	if err != nil {
		return Object{}, err
	}
	opts := minio.PutObjectOptions{ContentType: ct}
	if size < 0 {
		size = -1
		opts.PartSize = s.partSize
	}
	info, err := s.client.PutObject(ctx, s.bucket, key, r, size, opts)
	if err != nil {
		return Object{}, s.mapErr("put", key, err)
	}
	mod := info.LastModified
	if mod.IsZero() {
		mod = time.Now()
	}
	return Object{Key: key, Size: info.Size, ContentType: ct, ModTime: mod.UTC(), ETag: strings.Trim(info.ETag, `"`)}, nil
}

// Open implements Store. The reader is a *minio.Object: reads are ranged
// GETs issued under ctx, and Seek is supported.
func (s *S3) Open(ctx context.Context, key string) (io.ReadSeekCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Object{}, s.mapErr("open", key, err)
	}
	info, err := obj.Stat()
	if err != nil {
		_ = obj.Close()
		return nil, Object{}, s.mapErr("open", key, err)
	}
	return obj, objectFromInfo(key, info), nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s.mapErr("stat", key, err)
	}
	return objectFromInfo(key, info), nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if err := s.mapErr("delete", key, err); !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// PresignGet implements Store with a SigV4 presigned GET. The URL names
// the configured endpoint, so it works for clients that can reach it.
func (s *S3) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := validateTTL(ttl); err != nil {
		return "", err
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, key, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("store: presign get %s: %w", key, err)
	}
	return u.String(), nil
}

// PresignPut implements Store with a SigV4 presigned PUT; no header is
// signed, so any Content-Type may be sent.
func (s *S3) PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := validateTTL(ttl); err != nil {
		return "", err
	}
	u, err := s.client.PresignedPutObject(ctx, s.bucket, key, ttl)
	if err != nil {
		return "", fmt.Errorf("store: presign put %s: %w", key, err)
	}
	return u.String(), nil
}

func objectFromInfo(key string, info minio.ObjectInfo) Object {
	ct := info.ContentType
	// S3 and MinIO store binary/octet-stream for a PUT without a
	// Content-Type (a presigned PUT may send none): that is the default,
	// named as Put and Local name it.
	if ct == "" || ct == "binary/octet-stream" {
		ct = "application/octet-stream"
	}
	return Object{Key: key, Size: info.Size, ContentType: ct, ModTime: info.LastModified.UTC(), ETag: strings.Trim(info.ETag, `"`)}
}

// mapErr wraps a minio error, turning NoSuchKey (and other 404s on an
// object) into ErrNotFound and NoSuchBucket into ErrBucketNotFound.
func (s *S3) mapErr(op, key string, err error) error {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch {
		case er.Code == "NoSuchBucket":
			return fmt.Errorf("store: %s %s: bucket %s: %w", op, key, s.bucket, ErrBucketNotFound)
		case er.Code == "NoSuchKey" || er.Code == "NotFound" || er.StatusCode == http.StatusNotFound:
			return fmt.Errorf("store: %s %s: %w", op, key, ErrNotFound)
		case er.Code == "EntityTooLarge":
			return fmt.Errorf("store: %s %s: %w: %w", op, key, ErrTooLarge, err)
		}
	}
	return fmt.Errorf("store: %s %s: %w", op, key, err)
}
