package account

import (
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestCreateAccountDefaultsAndValidation(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)

	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	if !strings.HasPrefix(a.ID, "acct_") || len(a.ID) != len("acct_")+20 {
		t.Errorf("id %q", a.ID)
	}
	if a.BillingType != BillingPrepaid || a.SpendingLimit != 5000 || a.PrepaidBalance != 0 || a.RateLimits != DefaultRateLimits() {
		t.Errorf("defaults: %+v", a)
	}
	if !a.CreatedAt.Equal(e.clock.Now()) {
		t.Errorf("created_at %v", a.CreatedAt)
	}
	got, err := s.GetAccount(ctx, a.ID)
	if err != nil || got != a {
		t.Fatalf("get: %+v, %v; want %+v", got, err, a)
	}

	b := mustAccount(t, s, AccountInput{Email: "bob@example.com", BillingType: BillingPostpaid, SpendingLimit: ptr(15.0), PrepaidBalance: ptr(3.5)})
	if b.BillingType != BillingPostpaid || b.SpendingLimit != 15 || b.PrepaidBalance != 3.5 {
		t.Errorf("explicit: %+v", b)
	}

	for _, tc := range []struct {
		name string
		in   AccountInput
		want error
	}{
		{"empty email", AccountInput{}, ErrInvalid},
		{"no at", AccountInput{Email: "nobody"}, ErrInvalid},
		{"display name", AccountInput{Email: "Ann <ann2@example.com>"}, ErrInvalid},
		{"billing type", AccountInput{Email: "c@example.com", BillingType: "free"}, ErrInvalid},
		{"negative limit", AccountInput{Email: "c@example.com", SpendingLimit: ptr(-1.0)}, ErrInvalid},
		{"negative balance", AccountInput{Email: "c@example.com", PrepaidBalance: ptr(-0.01)}, ErrInvalid},
		{"duplicate email", AccountInput{Email: "ANN@example.com"}, ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateAccount(ctx, tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "account: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}

	list, err := s.ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list: %+v", list)
	}

	if _, err := s.GetAccount(ctx, "acct_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
	if _, err := s.GetAccount(ctx, "bad.id"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get malformed: %v", err)
	}
}

func TestUpdateAccount(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})

	u, err := s.UpdateAccount(ctx, a.ID, AccountPatch{SpendingLimit: ptr(20.0), RateLimits: &RateLimits{RPM: 7, Concurrency: 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := RateLimits{RPM: 7, ReadRPM: 5, BillingRPM: 5, Concurrency: 3}
	if u.SpendingLimit != 20 || u.PrepaidBalance != 0 || u.RateLimits != want {
		t.Errorf("updated: %+v", u)
	}
	u, err = s.UpdateAccount(ctx, a.ID, AccountPatch{PrepaidBalance: ptr(9.0)})
	if err != nil || u.PrepaidBalance != 9 || u.SpendingLimit != 20 || u.RateLimits != want {
		t.Errorf("second update: %+v, %v", u, err)
	}
	got, _ := s.GetAccount(ctx, a.ID)
	if got != u {
		t.Errorf("stored %+v, returned %+v", got, u)
	}

	for _, p := range []AccountPatch{
		{SpendingLimit: ptr(-1.0)},
		{PrepaidBalance: ptr(-1.0)},
		{RateLimits: &RateLimits{RPM: -1}},
	} {
		if _, err := s.UpdateAccount(ctx, a.ID, p); !errors.Is(err, ErrInvalid) {
			t.Errorf("patch %+v: %v, want ErrInvalid", p, err)
		}
	}
	if _, err := s.UpdateAccount(ctx, "acct_missing", AccountPatch{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}

	// Concurrent patches from two replicas all land (CAS loop).
	s2 := e.service(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = s2
			}
			if i < 10 {
				_, err := svc.UpdateAccount(ctx, a.ID, AccountPatch{SpendingLimit: ptr(100.0)})
				if err != nil {
					t.Error(err)
				}
			} else {
				_, err := svc.UpdateAccount(ctx, a.ID, AccountPatch{PrepaidBalance: ptr(50.0)})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, _ = s.GetAccount(ctx, a.ID)
	if got.SpendingLimit != 100 || got.PrepaidBalance != 50 || got.RateLimits != want {
		t.Errorf("after concurrent patches: %+v", got)
	}
}

func TestKeysCreateAuthenticateRevoke(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})

	k, secret, err := s.CreateKey(ctx, a.ID, KindPersonal)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "vfx_sk_") || len(secret) != 39 || !wellFormedSecret(secret) {
		t.Errorf("secret %q", secret)
	}
	if !strings.HasPrefix(k.ID, "key_") || k.AccountID != a.ID || k.Kind != KindPersonal || k.Prefix != secret[:8] || k.RevokedAt != nil {
		t.Errorf("key %+v", k)
	}
	org, orgSecret, err := s.CreateKey(ctx, a.ID, KindOrganization)
	if err != nil || org.Kind != KindOrganization || orgSecret == secret {
		t.Fatalf("org key %+v %v", org, err)
	}

	for name, svc := range map[string]*Service{"same": s, "replica": replica} {
		p, err := svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatalf("%s: authenticate: %v", name, err)
		}
		if p.Account != a || p.Key != k {
			t.Errorf("%s: principal %+v", name, p)
		}
		p, err = svc.Authenticate(ctx, orgSecret)
		if err != nil || p.Key.Kind != KindOrganization {
			t.Errorf("%s: org principal %+v %v", name, p, err)
		}
	}

	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	// At once, on both replicas, with no waiting.
	for name, svc := range map[string]*Service{"same": s, "replica": replica} {
		if _, err := svc.Authenticate(ctx, secret); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: revoked key: %v", name, err)
		}
		if _, err := svc.Authenticate(ctx, orgSecret); err != nil {
			t.Errorf("%s: other key after revoke: %v", name, err)
		}
	}
	if err := replica.RevokeKey(ctx, k.ID); err != nil {
		t.Errorf("second revoke: %v", err)
	}
	if err := s.RevokeKey(ctx, "key_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}
	if _, _, err := s.CreateKey(ctx, a.ID, "admin"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad kind: %v", err)
	}
	if _, _, err := s.CreateKey(ctx, "acct_missing", KindPersonal); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	_, secret, err := s.CreateKey(ctx, a.ID, KindPersonal)
	if err != nil {
		t.Fatal(err)
	}
	unknown, _ := randomBase62(32)
	for _, bad := range []string{
		"",
		"garbage",
		"vfx_sk_" + unknown,
		secret[:len(secret)-1],
		secret + "x",
		strings.ToUpper(secret),
		"vfx_sk_" + strings.Repeat("!", 32),
		" " + secret,
	} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Authenticate(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// TestSecretsAreNotStored scans every bucket, keys and values, for the
// secrets: only their hashes may be stored.
func TestSecretsAreNotStored(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	var secrets []string
	for _, kind := range []Kind{KindPersonal, KindOrganization, KindPersonal} {
		_, secret, err := s.CreateKey(ctx, a.ID, kind)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret)
	}
	if _, err := s.WebhookSecret(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	scanned := 0
	for _, bucket := range []string{BucketAccounts, BucketKeys, BucketKeyHashes, BucketRateLimits, BucketUsage, BucketInFlight} {
		kv, err := e.js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", bucket, err)
		}
		lister, err := kv.ListKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for key := range lister.Keys() {
			entry, err := kv.Get(ctx, key)
			if err != nil {
				if errors.Is(err, jetstream.ErrKeyNotFound) {
					continue
				}
				t.Fatal(err)
			}
			scanned++
			for _, secret := range secrets {
				random := secret[len(SecretPrefix):]
				if strings.Contains(key, random) || strings.Contains(string(entry.Value()), random) {
					t.Errorf("bucket %s key %s holds a secret", bucket, key)
				}
			}
		}
	}
	if scanned < 7 {
		t.Errorf("scanned only %d entries", scanned)
	}
	// And the hash is what the key record holds.
	kv, _ := e.js.KeyValue(ctx, BucketKeyHashes)
	if _, err := kv.Get(ctx, hashSecret(secrets[0])); err != nil {
		t.Errorf("hash index: %v", err)
	}
}

func TestWebhookSecret(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	b := mustAccount(t, s, AccountInput{Email: "bob@example.com"})

	const n = 20
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			sec, err := svc.WebhookSecret(ctx, a.ID)
			if err != nil {
				t.Error(err)
			}
			got[i] = sec
		}()
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("concurrent callers disagree: %q vs %q", got[i], got[0])
		}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got[0], "whsec_"))
	if !strings.HasPrefix(got[0], "whsec_") || err != nil || len(raw) != 32 {
		t.Errorf("secret %q: %v, %d bytes", got[0], err, len(raw))
	}
	again, err := replica.WebhookSecret(ctx, a.ID)
	if err != nil || again != got[0] {
		t.Errorf("not stable: %q %v", again, err)
	}
	other, err := s.WebhookSecret(ctx, b.ID)
	if err != nil || other == got[0] {
		t.Errorf("second account: %q %v", other, err)
	}
	if _, err := s.WebhookSecret(ctx, "acct_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}
	// The webhook secret does not make an account appear in the list.
	list, _ := s.ListAccounts(ctx)
	if len(list) != 2 {
		t.Errorf("list has %d accounts", len(list))
	}
}

func TestEnsureDevAccount(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)

	type result struct {
		acct    Account
		secret  string
		created bool
		err     error
	}
	results := make([]result, 6)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			var r result
			r.acct, r.secret, r.created, r.err = svc.EnsureDevAccount(ctx, "dev@localhost.localdomain")
			results[i] = r
		}()
	}
	wg.Wait()
	var made []result
	for _, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.created {
			made = append(made, r)
		} else if r.secret != "" {
			t.Errorf("secret returned without creation")
		}
	}
	if len(made) != 1 {
		t.Fatalf("%d callers created the dev account, want 1", len(made))
	}
	dev := made[0]
	if dev.acct.BillingType != BillingPrepaid || dev.acct.PrepaidBalance != 1000 || dev.acct.Email != "dev@localhost.localdomain" {
		t.Errorf("dev account %+v", dev.acct)
	}
	p, err := s.Authenticate(ctx, dev.secret)
	if err != nil || p.Account.ID != dev.acct.ID || p.Key.Kind != KindOrganization {
		t.Errorf("dev key: %+v %v", p, err)
	}
	a, secret, created, err := s.EnsureDevAccount(ctx, "dev@localhost.localdomain")
	if err != nil || created || secret != "" || a.ID != dev.acct.ID {
		t.Errorf("second start: %+v %q %v %v", a, secret, created, err)
	}
	list, _ := s.ListAccounts(ctx)
	if len(list) != 1 {
		t.Errorf("%d accounts", len(list))
	}
}

func TestEnsureDevAccountSkipsWhenAccountsExist(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	a, secret, created, err := s.EnsureDevAccount(ctx, "dev@example.com")
	if err != nil || created || secret != "" || a.ID != "" {
		t.Errorf("got %+v %q %v %v", a, secret, created, err)
	}
}

func TestOpenIsIdempotent(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		if _, err := Open(testCtx(t), e.js, Config{}); err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	if _, err := Open(testCtx(t), nil, Config{}); err == nil {
		t.Error("nil jetstream accepted")
	}
}
