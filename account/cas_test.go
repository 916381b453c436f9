package account

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// racingKV is a real bucket in which another writer gets in first: just
// before the first Create or Update of key, race runs (a concurrent
// writer's change, through another replica), so the caller's
// compare-and-set loses and its loop must read again.
type racingKV struct {
	jetstream.KeyValue
	key   string
	race  func()
	once  sync.Once
	fired bool
}

func (k *racingKV) before(key string) {
	if key == k.key {
		k.once.Do(func() { k.race(); k.fired = true })
	}
}

func (k *racingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	k.before(key)
	return k.KeyValue.Create(ctx, key, value, opts...)
}

func (k *racingKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	k.before(key)
	return k.KeyValue.Update(ctx, key, value, rev)
}

// TestWebhookSecretLosesCreate: a first call whose create of the secret
// loses to another replica's returns the other replica's secret, for
// accounts and organisations.
func TestWebhookSecretLosesCreate(t *testing.T) {
	e := newEnv(t)
	s, replica := e.service(t), e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "race@example.com"})
	var theirs string
	race := &racingKV{KeyValue: s.accounts, key: "whsec." + a.ID, race: func() {
		var err error
		if theirs, err = replica.WebhookSecret(ctx, a.ID); err != nil {
			t.Error(err)
		}
	}}
	s.accounts = race
	got, err := s.WebhookSecret(ctx, a.ID)
	if err != nil || !race.fired || got != theirs || theirs == "" {
		t.Fatalf("account secret %q (%v, raced %v), the other replica's %q", got, err, race.fired, theirs)
	}

	o, err := s.CreateOrg(ctx, "Race Org")
	if err != nil {
		t.Fatal(err)
	}
	race = &racingKV{KeyValue: s.orgs, key: "whsec." + o.ID, race: func() {
		if theirs, err = replica.OrgWebhookSecret(ctx, o.ID); err != nil {
			t.Error(err)
		}
	}}
	s.orgs = race
	got, err = s.OrgWebhookSecret(ctx, o.ID)
	if err != nil || !race.fired || got != theirs || theirs == "" {
		t.Fatalf("org secret %q (%v, raced %v), the other replica's %q", got, err, race.fired, theirs)
	}
}

// TestReservationLosesRace: a Reserve whose create of the entry loses to
// another replica's Reserve of the same job is a no-op, and a release
// whose held -> releasing compare-and-set loses to another replica's
// release of the same job reads again and finds it gone: either way the
// job is counted once and subtracted once.
func TestReservationLosesRace(t *testing.T) {
	e := newEnv(t)
	s, replica := e.service(t), e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "inflight-race@example.com", BillingType: BillingPostpaid})
	if err := s.Reserve(ctx, a, "vfx_other", 0.25, true); err != nil {
		t.Fatal(err)
	}
	real := s.inflight
	race := &racingKV{KeyValue: real, key: entryKey(a.ID, "vfx_raced"), race: func() {
		if err := replica.Reserve(ctx, a, "vfx_raced", 0.5, true); err != nil {
			t.Error(err)
		}
	}}
	s.inflight = race
	if err := s.Reserve(ctx, a, "vfx_raced", 0.5, true); err != nil || !race.fired {
		t.Fatalf("reserve after losing the create: %v (raced %v)", err, race.fired)
	}
	if n := checkAggregate(t, s, a.ID); n != 2 {
		t.Fatalf("%d reservations, want 2", n)
	}
	if sum, _ := s.readSum(ctx, a.ID); sum.Micros != 750_000 {
		t.Fatalf("aggregate %d µ$, want 750000 (the raced job counted once)", sum.Micros)
	}

	race = &racingKV{KeyValue: real, key: entryKey(a.ID, "vfx_raced"), race: func() {
		if err := replica.release(ctx, a.ID, "vfx_raced"); err != nil {
			t.Error(err)
		}
	}}
	s.inflight = race
	if err := s.release(ctx, a.ID, "vfx_raced"); err != nil || !race.fired {
		t.Fatalf("release after losing the compare-and-set: %v (raced %v)", err, race.fired)
	}
	s.inflight = real
	if n := checkAggregate(t, s, a.ID); n != 1 {
		t.Fatalf("%d reservations, want 1 (vfx_other)", n)
	}
	if sum, _ := s.readSum(ctx, a.ID); sum.Count != 1 || sum.Micros != 250_000 {
		t.Fatalf("aggregate %+v, want vfx_other's 1 job, 250000 µ$ (the raced job subtracted once)", sum)
	}
}
