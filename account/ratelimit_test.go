package account

import (
	"errors"
	"testing"
	"time"
)

func TestRateLimitWindow(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	start := time.Date(2026, 3, 14, 12, 0, 10, 0, time.UTC)
	e.clock.Set(start)
	reset := time.Date(2026, 3, 14, 12, 1, 0, 0, time.UTC)

	// Peek on an untouched window.
	d, err := s.Peek(ctx, a, ClassWrite)
	if err != nil || !d.Allowed || d.Limit != 5 || d.Remaining != 5 || !d.Reset.Equal(reset) {
		t.Fatalf("peek: %+v %v", d, err)
	}
	for i := range 5 {
		svc := s
		if i%2 == 1 {
			svc = replica // the counter is shared by replicas
		}
		d, err := svc.Allow(ctx, a, ClassWrite)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed || d.Limit != 5 || d.Remaining != 4-i || !d.Reset.Equal(reset) || d.RetryAfter != 0 {
			t.Fatalf("allow %d: %+v", i+1, d)
		}
		// Peek does not consume.
		p, err := s.Peek(ctx, a, ClassWrite)
		if err != nil || p.Remaining != 4-i {
			t.Fatalf("peek after %d: %+v %v", i+1, p, err)
		}
	}
	e.clock.Set(start.Add(5 * time.Second))
	for _, svc := range []*Service{s, replica} {
		d, err = svc.Allow(ctx, a, ClassWrite)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.Remaining != 0 || d.Limit != 5 || !d.Reset.Equal(reset) || d.RetryAfter != 45*time.Second {
			t.Fatalf("6th: %+v", d)
		}
	}
	if p, _ := s.Peek(ctx, a, ClassWrite); p.Allowed || p.Remaining != 0 || p.RetryAfter != 45*time.Second {
		t.Errorf("peek when exhausted: %+v", p)
	}

	// Other classes have their own counters.
	for _, class := range []Class{ClassRead, ClassBilling} {
		d, err := s.Allow(ctx, a, class)
		if err != nil || !d.Allowed || d.Remaining != 4 {
			t.Errorf("%s: %+v %v", class, d, err)
		}
	}
	// Other accounts too: the count is per account.
	b := mustAccount(t, s, AccountInput{Email: "bob@example.com"})
	if d, err := s.Allow(ctx, b, ClassWrite); err != nil || !d.Allowed || d.Remaining != 4 {
		t.Errorf("other account: %+v %v", d, err)
	}

	// The next window starts afresh.
	e.clock.Set(reset)
	d, err = replica.Allow(ctx, a, ClassWrite)
	if err != nil || !d.Allowed || d.Remaining != 4 || !d.Reset.Equal(reset.Add(time.Minute)) {
		t.Fatalf("after rollover: %+v %v", d, err)
	}

	if _, err := s.Allow(ctx, a, "admin"); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown class: %v", err)
	}
}

func TestRateLimitOverrides(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	a, err := s.UpdateAccount(ctx, a.ID, AccountPatch{RateLimits: &RateLimits{RPM: 7, ReadRPM: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for class, limit := range map[Class]int{ClassWrite: 7, ClassRead: 2, ClassBilling: 5} {
		for i := range limit {
			d, err := s.Allow(ctx, a, class)
			if err != nil || !d.Allowed || d.Limit != limit {
				t.Fatalf("%s %d: %+v %v", class, i, d, err)
			}
		}
		if d, _ := s.Allow(ctx, a, class); d.Allowed {
			t.Errorf("%s: %d+1 allowed", class, limit)
		}
	}
	// A zero RateLimits (for example an Account built by hand) means defaults.
	zero := Account{ID: "acct_zero"}
	if d, err := s.Allow(ctx, zero, ClassWrite); err != nil || d.Limit != 5 {
		t.Errorf("zero limits: %+v %v", d, err)
	}
}

func TestRateLimitConcurrent(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com"})
	const n = 30
	allowed := make(chan bool, n)
	for i := range n {
		go func() {
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			d, err := svc.Allow(ctx, a, ClassWrite)
			if err != nil {
				t.Error(err)
			}
			allowed <- d.Allowed
		}()
	}
	count := 0
	for range n {
		if <-allowed {
			count++
		}
	}
	if count != 5 {
		t.Errorf("%d of %d concurrent requests allowed, want 5", count, n)
	}
}
