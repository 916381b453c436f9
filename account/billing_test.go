package account

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vfxrender/vfx/internal/kvcas"
)

func TestConcurrencyLimit(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid})
	for i := range 10 {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_%d", i), 0.04, true); err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
	}
	// Re-reserving a job in flight is a no-op, even at the limit.
	if err := s.Reserve(ctx, a, "vfx_3", 0.04, true); err != nil {
		t.Errorf("idempotent reserve: %v", err)
	}
	err := s.Reserve(ctx, a, "vfx_10", 0.04, true)
	var le *LimitError
	if !errors.Is(err, ErrConcurrencyLimit) || !errors.As(err, &le) || le.InFlight != 10 || le.MaxInFlight != 10 {
		t.Fatalf("11th: %v (%+v)", err, le)
	}
	if err.Error() != "account: 10 jobs in flight, the concurrency limit is 10" {
		t.Errorf("message %q", err)
	}
	// Organisation keys do not count concurrency.
	if err := s.Reserve(ctx, a, "vfx_org", 0.04, false); err != nil {
		t.Errorf("org reserve: %v", err)
	}
	if n, err := s.InFlight(ctx, a.ID); err != nil || n != 11 {
		t.Errorf("in flight %d %v", n, err)
	}
	if err := s.Settle(ctx, a.ID, "vfx_0", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, a.ID, "vfx_org", true, MeterImage1080p, 1, 0.04); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, a, "vfx_10", 0.04, true); err != nil {
		t.Errorf("after settle: %v", err)
	}
	if err := s.Reserve(ctx, a, "vfx_11", 0.04, true); !errors.Is(err, ErrConcurrencyLimit) {
		t.Errorf("12th: %v", err)
	}
	// A lower override applies at once.
	if _, err := s.UpdateAccount(ctx, a.ID, AccountPatch{RateLimits: &RateLimits{Concurrency: 20}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, a, "vfx_11", 0.04, true); err != nil {
		t.Errorf("after raising concurrency: %v", err)
	}
	if err := s.Reserve(ctx, a, "bad.id", 1, true); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad job id: %v", err)
	}
	if err := s.Reserve(ctx, Account{ID: "acct_missing"}, "vfx_x", 1, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}
}

func TestConcurrentReserve(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(100.0)})
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			errs[i] = svc.Reserve(ctx, a, fmt.Sprintf("vfx_job%02d", i), 1, true)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrConcurrencyLimit):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 10 {
		t.Errorf("%d reservations succeeded, want exactly 10", ok)
	}
	if got, _ := s.InFlight(ctx, a.ID); got != 10 {
		t.Errorf("in flight %d", got)
	}
}

func TestHardLimit(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid, SpendingLimit: ptr(15.0)})
	if err := s.Settle(ctx, a.ID, "vfx_done", true, MeterVideo1080p, 620, 12.40); err != nil {
		t.Fatal(err)
	}
	err := s.Reserve(ctx, a, "vfx_big", 4.80, false)
	var le *LimitError
	if !errors.Is(err, ErrHardLimit) || !errors.As(err, &le) {
		t.Fatalf("over limit: %v", err)
	}
	if want := "account: current usage $12.40 + job cost $4.80 would exceed the spending limit $15.00"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if !approx(le.Usage, 12.40) || !approx(le.Cost, 4.80) || !approx(le.Limit, 15) {
		t.Errorf("fields %+v", le)
	}
	// In-flight estimates count.
	if err := s.Reserve(ctx, a, "vfx_a", 2.00, false); err != nil {
		t.Fatal(err)
	}
	err = s.Reserve(ctx, a, "vfx_b", 1.00, false)
	if !errors.Is(err, ErrHardLimit) || !strings.Contains(err.Error(), "in-flight jobs $2.00") || !strings.Contains(err.Error(), "$12.40") {
		t.Fatalf("with in flight: %v", err)
	}
	// Exactly at the limit passes.
	if err := s.Reserve(ctx, a, "vfx_c", 0.60, false); err != nil {
		t.Errorf("exactly at limit: %v", err)
	}
	if err := s.Reserve(ctx, a, "vfx_d", 0.01, true); !errors.Is(err, ErrHardLimit) {
		t.Errorf("past limit: %v", err)
	}
	// Failing a job frees its estimate.
	if err := s.Settle(ctx, a.ID, "vfx_a", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, a, "vfx_d", 1.00, true); err != nil {
		t.Errorf("after release: %v", err)
	}
	// Raising the limit takes effect at once.
	if _, err := s.UpdateAccount(ctx, a.ID, AccountPatch{SpendingLimit: ptr(5000.0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, a, "vfx_big", 4.80, false); err != nil {
		t.Errorf("after raising limit: %v", err)
	}
}

func TestPrepaidBalance(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(10.0)})
	if err := s.Reserve(ctx, a, "vfx_1", 6, false); err != nil {
		t.Fatal(err)
	}
	err := s.Reserve(ctx, a, "vfx_2", 5, false)
	var le *LimitError
	if !errors.Is(err, ErrInsufficientBalance) || !errors.As(err, &le) || !approx(le.Limit, 10) || !approx(le.Reserved, 6) || !approx(le.Cost, 5) {
		t.Fatalf("insufficient: %v %+v", err, le)
	}
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterVideo1080p, 300, 6); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetAccount(ctx, a.ID)
	if !approx(got.PrepaidBalance, 4) {
		t.Errorf("balance %v, want 4", got.PrepaidBalance)
	}
	if err := s.Reserve(ctx, a, "vfx_2", 5, false); !errors.Is(err, ErrInsufficientBalance) {
		t.Errorf("5 on 4: %v", err)
	}
	if err := s.Reserve(ctx, a, "vfx_2", 4, false); err != nil {
		t.Errorf("4 on 4: %v", err)
	}
	// Postpaid accounts have no balance check.
	p := mustAccount(t, s, AccountInput{Email: "bob@example.com", BillingType: BillingPostpaid})
	if err := s.Reserve(ctx, p, "vfx_p", 100, false); err != nil {
		t.Errorf("postpaid: %v", err)
	}
	if err := s.Settle(ctx, p.ID, "vfx_p", true, MeterVideo1080p, 5000, 100); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetAccount(ctx, p.ID); got.PrepaidBalance != 0 {
		t.Errorf("postpaid balance changed: %v", got.PrepaidBalance)
	}
}

func TestSettleIdempotent(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(100.0)})
	if err := s.Reserve(ctx, a, "vfx_1", 4.80, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterVideo1080p, 240, 4.80); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		b, err := s.Billing(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !approx(b.CurrentPeriodUsage, 4.80) || !approx(b.PrepaidBalance, 95.20) {
			t.Errorf("%s: usage %v balance %v", when, b.CurrentPeriodUsage, b.PrepaidBalance)
		}
		for _, m := range b.Meters {
			want := 0.0
			if m.ID == MeterVideo1080p {
				want = 240
			}
			if m.TotalUsage != want {
				t.Errorf("%s: meter %s = %v, want %v", when, m.ID, m.TotalUsage, want)
			}
		}
		if n, _ := s.InFlight(ctx, a.ID); n != 0 {
			t.Errorf("%s: in flight %d", when, n)
		}
	}
	check("first settle")
	// Again, with other numbers, from both replicas at once: nothing changes.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			if err := svc.Settle(ctx, a.ID, "vfx_1", true, MeterVideo720p, 99, 9.99); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	check("repeated settles")
	if err := s.Settle(ctx, a.ID, "vfx_1", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	check("release after charge")

	// A job settled for the first time concurrently is charged once.
	if err := s.Reserve(ctx, a, "vfx_2", 0.04, true); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := s
			if i%2 == 1 {
				svc = replica
			}
			if err := svc.Settle(ctx, a.ID, "vfx_2", true, MeterImage1080p, 1, 0.04); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := s.Billing(ctx, a.ID)
	if !approx(b.CurrentPeriodUsage, 4.84) || !approx(b.PrepaidBalance, 95.16) || b.Meters[1].TotalUsage != 1 {
		t.Errorf("concurrent first settle: %+v", b)
	}

	for _, tc := range []struct {
		name                string
		account, job, meter string
		units, cost         float64
		want                error
	}{
		{"unknown account", "acct_missing", "vfx_3", MeterImage720p, 1, 1, ErrNotFound},
		{"bad job id", a.ID, "a.b", MeterImage720p, 1, 1, ErrInvalid},
		{"no meter", a.ID, "vfx_3", "", 1, 1, ErrInvalid},
		{"negative cost", a.ID, "vfx_3", MeterImage720p, 1, -1, ErrInvalid},
		{"negative units", a.ID, "vfx_3", MeterImage720p, -1, 1, ErrInvalid},
	} {
		if err := s.Settle(ctx, tc.account, tc.job, true, tc.meter, tc.units, tc.cost); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSettleResumes completes a charge that stopped half-way (ledger entry
// written, usage counted, balance not yet debited) without counting twice.
func TestSettleResumes(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(10.0)})
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterImage1080p, 1, 1); err != nil {
		t.Fatal(err)
	}
	// Rewind the ledger entry to "pending", as if the process had died
	// after counting usage and debiting but before recording either.
	key := a.ID + ".charge.vfx_1"
	if _, err := s.advance(ctx, key, chargeDone, chargePending); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterImage1080p, 1, 1); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Billing(ctx, a.ID)
	if !approx(b.CurrentPeriodUsage, 1) || !approx(b.PrepaidBalance, 9) || b.Meters[1].TotalUsage != 1 {
		t.Errorf("resumed: %+v", b)
	}
	entry, _ := kvcas.JSON(ctx, s.usage, key, func(*charge, bool) (bool, error) { return false, nil })
	if entry.State != chargeDone {
		t.Errorf("ledger state %q", entry.State)
	}
}

func TestBillingPeriodRollover(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	e.clock.Set(time.Date(2026, 1, 20, 8, 30, 0, 0, time.UTC))
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid, SpendingLimit: ptr(5.0)})
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterVideo1080p, 240, 4.80); err != nil {
		t.Fatal(err)
	}
	b, err := s.Billing(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !b.PeriodStart.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !b.PeriodEnd.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("period %v – %v", b.PeriodStart, b.PeriodEnd)
	}
	if !approx(b.CurrentPeriodUsage, 4.80) {
		t.Errorf("usage %v", b.CurrentPeriodUsage)
	}
	if err := s.Reserve(ctx, a, "vfx_2", 0.40, false); !errors.Is(err, ErrHardLimit) {
		t.Errorf("january: %v", err)
	}

	e.clock.Set(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	b, err = s.Billing(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !b.PeriodStart.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) || !b.PeriodEnd.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("february period %v – %v", b.PeriodStart, b.PeriodEnd)
	}
	if b.CurrentPeriodUsage != 0 {
		t.Errorf("february usage %v", b.CurrentPeriodUsage)
	}
	for _, m := range b.Meters {
		if m.TotalUsage != 0 {
			t.Errorf("february meter %+v", m)
		}
	}
	if err := s.Reserve(ctx, a, "vfx_2", 0.40, false); err != nil {
		t.Errorf("february reserve: %v", err)
	}
	// The January job settled again in February is still charged once.
	if err := s.Settle(ctx, a.ID, "vfx_1", true, MeterVideo1080p, 240, 4.80); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Billing(ctx, a.ID); b.CurrentPeriodUsage != 0 {
		t.Errorf("january job charged again in february: %v", b.CurrentPeriodUsage)
	}
}

func TestCustomPeriod(t *testing.T) {
	e := newEnv(t)
	weekly := func(t time.Time) time.Time {
		t = t.UTC()
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -int((d.Weekday()+6)%7)) // Monday
	}
	s, err := Open(testCtx(t), e.js, Config{Now: e.clock.Now, PeriodStart: weekly})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Set(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)) // a Saturday
	start, end := s.period(e.clock.Now())
	if !start.Equal(time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("weekly period %v – %v", start, end)
	}
}

func TestMetersAndPrices(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		res    int
		frames int
		meter  string
		cost   float64
	}{
		{"image", 720, 0, "api_image_720p", 0.02},
		{"image", 1080, 0, "api_image_1080p", 0.04},
		{"image", 0, 50, "api_image_1080p", 0.04},
		{"video", 720, 100, "api_video_720p", 1.00},
		{"video", 1080, 240, "api_video_1080p", 4.80},
		{"video", 1080, 0, "api_video_1080p", 4.80},
		{"video", 720, 3, "api_video_720p", 0.03},
	} {
		if m := MeterFor(tc.typ, tc.res); m != tc.meter {
			t.Errorf("MeterFor(%s, %d) = %s", tc.typ, tc.res, m)
		}
		m, c := DefaultPrices().Estimate(tc.typ, tc.res, tc.frames)
		if m != tc.meter || !approx(c, tc.cost) {
			t.Errorf("Estimate(%s, %d, %d) = %s %v, want %s %v", tc.typ, tc.res, tc.frames, m, c, tc.meter, tc.cost)
		}
	}
	custom := PriceTable{MeterImage1080p: 0.5}
	if _, c := custom.Estimate("image", 1080, 0); c != 0.5 {
		t.Errorf("custom price %v", c)
	}
	if _, c := custom.Estimate("video", 1080, 10); c != 0 {
		t.Errorf("missing meter costs %v", c)
	}
	labels := MeterLabels()
	if len(labels) != 4 {
		t.Errorf("labels %v", labels)
	}
	for _, id := range meterIDs() {
		if labels[id] == "" {
			t.Errorf("no label for %s", id)
		}
		if _, ok := DefaultPrices()[id]; !ok {
			t.Errorf("no price for %s", id)
		}
	}

	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(50.0)})
	b, err := s.Billing(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantUnits := []string{"image", "image", "frame", "frame"}
	if len(b.Meters) != 4 {
		t.Fatalf("meters %+v", b.Meters)
	}
	for i, m := range b.Meters {
		if m.ID != meterIDs()[i] || m.Unit != wantUnits[i] || m.Label != labels[m.ID] || m.TotalUsage != 0 {
			t.Errorf("meter %d: %+v", i, m)
		}
	}
	if b.PrepaidBalance != 50 || b.CurrentPeriodUsage != 0 {
		t.Errorf("billing %+v", b)
	}
	for i, job := range []struct {
		typ    string
		res    int
		frames int
	}{{"image", 720, 0}, {"image", 720, 0}, {"video", 1080, 120}, {"video", 720, 48}, {"image", 1080, 0}} {
		meter, cost := DefaultPrices().Estimate(job.typ, job.res, job.frames)
		units := 1.0
		if job.typ == "video" {
			units = float64(job.frames)
		}
		if err := s.Settle(ctx, a.ID, fmt.Sprintf("vfx_%d", i), true, meter, units, cost); err != nil {
			t.Fatal(err)
		}
	}
	b, _ = s.Billing(ctx, a.ID)
	want := map[string]float64{MeterImage720p: 2, MeterImage1080p: 1, MeterVideo720p: 48, MeterVideo1080p: 120}
	for _, m := range b.Meters {
		if m.TotalUsage != want[m.ID] {
			t.Errorf("meter %s = %v, want %v", m.ID, m.TotalUsage, want[m.ID])
		}
	}
	wantUsage := 0.02 + 0.02 + 2.40 + 0.48 + 0.04
	if !approx(b.CurrentPeriodUsage, wantUsage) || !approx(b.PrepaidBalance, 50-wantUsage) {
		t.Errorf("usage %v balance %v", b.CurrentPeriodUsage, b.PrepaidBalance)
	}
	if _, err := s.Billing(ctx, "acct_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown account: %v", err)
	}
}

func TestLimitErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  *LimitError
		want string
	}{
		{&LimitError{Err: ErrHardLimit, Usage: 12.4, Cost: 4.8, Limit: 15}, "account: current usage $12.40 + job cost $4.80 would exceed the spending limit $15.00"},
		{&LimitError{Err: ErrHardLimit, Usage: 1, Reserved: 2, Cost: 3, Limit: 5}, "account: current usage $1.00 + in-flight jobs $2.00 + job cost $3.00 would exceed the spending limit $5.00"},
		{&LimitError{Err: ErrInsufficientBalance, Cost: 3, Limit: 2}, "account: prepaid balance $2.00 does not cover the job cost $3.00"},
		{&LimitError{Err: ErrConcurrencyLimit, InFlight: 10, MaxInFlight: 10}, "account: 10 jobs in flight, the concurrency limit is 10"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.err, tc.err.Err) {
			t.Errorf("%v does not unwrap", tc.err)
		}
	}
}
