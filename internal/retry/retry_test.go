package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Pause())
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if d := b.Pause(); d != 100*time.Millisecond {
		t.Errorf("after Reset: %v", d)
	}
	// A multiplier, no cap, and no overflow however long it runs.
	b = Backoff{Initial: time.Millisecond, Multiplier: 10}
	if a, c := b.Pause(), b.Pause(); a != time.Millisecond || c != 10*time.Millisecond {
		t.Errorf("multiplier 10: %v %v", a, c)
	}
	for range 100 {
		if d := b.Pause(); d <= 0 {
			t.Fatalf("pause %v after growing", d)
		}
	}
	// Jitter stays within (0, pause].
	b = Backoff{Initial: 8 * time.Millisecond, Max: 8 * time.Millisecond, Jitter: true}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Pause()
		if d <= 0 || d > 8*time.Millisecond {
			t.Fatalf("jittered pause %v outside (0, 8ms]", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("jitter gave only %d distinct pauses", len(seen))
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("cancelled sleep: %v after %v", err, time.Since(start))
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("zero sleep on an ended context: %v", err)
	}
}

func TestCall(t *testing.T) {
	fast := Backoff{Initial: time.Millisecond}
	transient, permanent := errors.New("transient"), errors.New("permanent")

	// Succeeds after two failures.
	n := 0
	err := Call(context.Background(), fast, nil, func(context.Context) error {
		if n++; n < 3 {
			return transient
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, n)
	}

	// A permanent error ends it at once, as it is.
	n = 0
	err = Call(context.Background(), fast, func(err error) bool { return err != permanent }, func(context.Context) error {
		n++
		return permanent
	})
	if err != permanent || n != 1 {
		t.Fatalf("permanent: %v after %d calls", err, n)
	}

	// The context ending stops it: the error wraps both.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	n = 0
	err = Call(ctx, fast, nil, func(context.Context) error { n++; return transient })
	var ce *ContextError
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, transient) || n < 2 {
		t.Fatalf("deadline: %v after %d calls", err, n)
	}

	// An ended context calls nothing.
	n = 0
	err = Call(ctx, fast, nil, func(context.Context) error { n++; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || n != 0 {
		t.Fatalf("ended context: %v after %d calls", err, n)
	}
}

func TestDo(t *testing.T) {
	transient, permanent := errors.New("transient"), errors.New("permanent")
	var slept []time.Duration
	record := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }

	// At most Attempts calls: the last error comes back as it is, after
	// Attempts-1 pauses of the Backoff.
	n := 0
	err := Do(context.Background(), Options{Attempts: 3, Backoff: Backoff{Initial: time.Second}, Sleep: record},
		func(context.Context) error { n++; return transient })
	if err != transient || n != 3 || len(slept) != 2 || slept[0] != time.Second || slept[1] != 2*time.Second {
		t.Fatalf("attempts: %v after %d calls, pauses %v", err, n, slept)
	}
	// Success on the last allowed attempt.
	n, slept = 0, nil
	err = Do(context.Background(), Options{Attempts: 3, Sleep: record}, func(context.Context) error {
		if n++; n < 3 {
			return transient
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("success on attempt 3: %v after %d", err, n)
	}

	// Retryable's pause wins over the Backoff's (which still grows), up to
	// MaxPause; its refusal ends the loop with the error as it is.
	n, slept = 0, nil
	o := Options{
		Backoff:  Backoff{Initial: time.Second},
		MaxPause: 10 * time.Second,
		Sleep:    record,
		Retryable: func(err error) (bool, time.Duration) {
			switch n {
			case 1:
				return true, 5 * time.Second
			case 2:
				return true, time.Minute
			case 3:
				return true, 0
			}
			return err != permanent, 0
		},
	}
	err = Do(context.Background(), o, func(context.Context) error {
		if n++; n == 4 {
			return permanent
		}
		return transient
	})
	want := []time.Duration{5 * time.Second, 10 * time.Second, 4 * time.Second}
	if err != permanent || n != 4 || len(slept) != 3 || slept[0] != want[0] || slept[1] != want[1] || slept[2] != want[2] {
		t.Fatalf("retryable: %v after %d calls, pauses %v, want %v", err, n, slept, want)
	}

	// A pause cut short by ctx: a *ContextError with both errors.
	ctx, cancel := context.WithCancel(context.Background())
	o = Options{Attempts: 5, Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return Sleep(ctx, d) }}
	err = Do(ctx, o, func(context.Context) error { return transient })
	var ce *ContextError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) || !errors.Is(err, transient) {
		t.Fatalf("cancelled pause: %v", err)
	}
}
