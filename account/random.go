package account

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"time"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomBase62 returns n characters drawn uniformly from base62 with
// crypto/rand (rejection sampling, no modulo bias).
func randomBase62(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/2+8)
	for len(out) < n {
		if _, err := crand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62
				continue
			}
			out = append(out, base62[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out), nil
}

func randomID(prefix string, n int) (string, error) {
	r, err := randomBase62(n)
	if err != nil {
		return "", err
	}
	return prefix + r, nil
}

func webhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := crand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// pause waits a short random time after a lost compare-and-set race.
func pause(ctx context.Context, attempt int) error {
	maxWait := time.Duration(min(attempt+1, 20)) * time.Millisecond
	t := time.NewTimer(mrand.N(maxWait) + 100*time.Microsecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
