package main

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestWorkerFlagsDefaultsAndEnv(t *testing.T) {
	cfg, err := parseWorkerFlags(nil, io.Discard, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.natsURL != "" || cfg.storeKind != "local" || cfg.storeDir != "vfx-data/store" || cfg.concurrency != 1 ||
		cfg.drain != 2*time.Minute || cfg.backend != "auto" || cfg.httpAddr != "127.0.0.1:9090" || cfg.name == "" ||
		cfg.queue.AckWait != time.Minute || cfg.queue.MaxDeliver != 5 || len(cfg.queue.RetryDelays) != 4 || cfg.queue.Replicas != 1 {
		t.Errorf("defaults: %+v", cfg)
	}

	env := envMap(map[string]string{
		"VFX_NATS_URL": "nats://a:4222,nats://b:4222", "VFX_CONCURRENCY": "3", "VFX_DRAIN_TIMEOUT": "10s",
		"VFX_ALLOW_HOSTS": "127.0.0.1, files.internal ,", "VFX_ALLOW_HTTP": "true", "VFX_WORKER_NAME": "gpu-7",
		"VFX_ACK_WAIT": "5s", "VFX_RETRY_DELAYS": "100ms,2s", "VFX_STORE": "s3", "VFX_REPLICAS": "3",
		"VFX_S3_ENDPOINT": "minio:9000", "VFX_S3_BUCKET": "envbucket", "VFX_S3_ACCESS_KEY": "ak", "VFX_S3_SECRET_KEY": "sk",
	})
	cfg, err = parseWorkerFlags([]string{"--concurrency", "2", "--s3-bucket", "flagbucket"}, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.natsURL != "nats://a:4222,nats://b:4222" || cfg.concurrency != 2 || cfg.drain != 10*time.Second ||
		!reflect.DeepEqual(cfg.allowHosts, []string{"127.0.0.1", "files.internal"}) || !cfg.allowHTTP || cfg.name != "gpu-7" ||
		cfg.queue.AckWait != 5*time.Second || cfg.queue.Replicas != 3 || !reflect.DeepEqual(cfg.queue.RetryDelays, []time.Duration{100 * time.Millisecond, 2 * time.Second}) {
		t.Errorf("env/flags: %+v", cfg)
	}
	if cfg.s3.Endpoint != "minio:9000" || cfg.s3.Bucket != "flagbucket" || cfg.s3.AccessKey != "ak" || cfg.s3.SecretKey != "sk" {
		t.Errorf("s3 config %+v: want env values with the flag's bucket", cfg.s3)
	}
}

func TestWorkerFlagsErrors(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--backend", "cuda"}, nil, "CUDA"},
		{[]string{"--concurrency", "0"}, nil, "--concurrency"},
		{[]string{"--replicas", "7"}, nil, "--replicas"},
		{[]string{"--retry-delays", "1s,soon"}, nil, "--retry-delays"},
		{[]string{"--ack-wait", "10ms"}, nil, "--ack-wait"},
		{[]string{"--store", "ftp"}, nil, "--store"},
		{[]string{"--store", "s3"}, nil, "VFX_S3_ENDPOINT"},
		{[]string{"--preset", "warp"}, nil, "preset"},
		{nil, map[string]string{"VFX_CONCURRENCY": "many"}, "VFX_CONCURRENCY"},
		{nil, map[string]string{"VFX_ALLOW_HTTP": "perhaps"}, "VFX_ALLOW_HTTP"},
		{[]string{"extra"}, nil, "unexpected argument"},
	}
	for _, c := range cases {
		_, err := parseWorkerFlags(c.args, io.Discard, envMap(c.env))
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want one mentioning %q", c.args, c.env, err, c.want)
		} else if !errors.As(err, &ue) {
			t.Errorf("%v: %T is not a usage error", c.args, err)
		}
	}
	if code, _, e := runCLI("worker", "--backend", "cuda"); code != 2 || !strings.Contains(e, "cuda") {
		t.Errorf("vfx worker --backend cuda: exit %d, %q", code, e)
	}
}

func TestRedactNATS(t *testing.T) {
	got := redactNATS("nats://user:pw@a:4222, nats://b:4222")
	if got != "nats://***@a:4222,nats://b:4222" {
		t.Errorf("got %q", got)
	}
}
