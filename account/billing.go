package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// Meter ids of the generation API.
const (
	MeterImage720p  = "api_image_720p"
	MeterImage1080p = "api_image_1080p"
	MeterVideo720p  = "api_video_720p"
	MeterVideo1080p = "api_video_1080p"
)

// MaxVideoFrames is the frame count Estimate assumes for a video whose
// frame count is not known yet (a video has at most 240 frames).
const MaxVideoFrames = 240

// meterIDs is the stable order of the known meters.
func meterIDs() []string {
	return []string{MeterImage720p, MeterImage1080p, MeterVideo720p, MeterVideo1080p}
}

// PriceTable maps a meter id to its price in dollars per unit. The unit of
// the image meters is one image (one per job), that of the video meters one
// output frame.
type PriceTable map[string]float64

// DefaultPrices returns the default price table, in dollars per unit:
//
//	api_image_720p   0.02 per image
//	api_image_1080p  0.04 per image
//	api_video_720p   0.01 per frame
//	api_video_1080p  0.02 per frame
//
// so a 240-frame 1080p video costs $4.80.
func DefaultPrices() PriceTable {
	return PriceTable{
		MeterImage720p:  0.02,
		MeterImage1080p: 0.04,
		MeterVideo720p:  0.01,
		MeterVideo1080p: 0.02,
	}
}

// MeterFor returns the meter of a generation: "api_video_…" for
// generationType "video", "api_image_…" otherwise; "…_720p" for
// maxResolution 720, "…_1080p" otherwise (the default resolution).
func MeterFor(generationType string, maxResolution int) string {
	res := "1080p"
	if maxResolution == 720 {
		res = "720p"
	}
	if generationType == "video" {
		return "api_video_" + res
	}
	return "api_image_" + res
}

// MeterLabels returns the human label of each known meter, by id.
func MeterLabels() map[string]string {
	return map[string]string{
		MeterImage720p:  "API image generation, 720p (per image)",
		MeterImage1080p: "API image generation, 1080p (per image)",
		MeterVideo720p:  "API video generation, 720p (per frame)",
		MeterVideo1080p: "API video generation, 1080p (per frame)",
	}
}

// MeterUnit returns the unit of a meter: "frame" for video meters, "image"
// otherwise.
func MeterUnit(meter string) string {
	if strings.HasPrefix(meter, "api_video_") {
		return "frame"
	}
	return "image"
}

// Estimate returns the meter and the cost in dollars of a generation: one
// unit for an image, frames units for a video (frames <= 0 means unknown and
// counts MaxVideoFrames). A meter missing from the table costs 0.
func (p PriceTable) Estimate(generationType string, maxResolution, frames int) (meter string, cost float64) {
	meter = MeterFor(generationType, maxResolution)
	units := 1
	if generationType == "video" {
		units = frames
		if units <= 0 {
			units = MaxVideoFrames
		}
	}
	return meter, roundMoney(p[meter] * float64(units))
}

// Meter is one line of the billing breakdown.
type Meter struct {
	// ID is the meter id, such as "api_video_1080p".
	ID string `json:"id"`
	// Label is the human label.
	Label string `json:"label"`
	// Unit is "image" or "frame".
	Unit string `json:"unit"`
	// TotalUsage is the number of units charged in the period.
	TotalUsage float64 `json:"total_usage"`
}

// Billing is an account's billing state for the current period.
type Billing struct {
	// PeriodStart is the first instant of the current billing period.
	PeriodStart time.Time
	// PeriodEnd is the first instant of the next billing period.
	PeriodEnd time.Time
	// PrepaidBalance is the prepaid balance in dollars.
	PrepaidBalance float64
	// CurrentPeriodUsage is the dollars charged in the period.
	CurrentPeriodUsage float64
	// Meters holds the four known meters in a stable order (zero when
	// unused), then any other charged meter by id.
	Meters []Meter
}

// periodUsage is the stored usage of one (account, period). Recent holds the
// last jobs counted, so that a Settle resumed after a crash does not count
// twice.
type periodUsage struct {
	Usage  float64            `json:"usage"`
	Meters map[string]float64 `json:"meters,omitempty"`
	Recent []string           `json:"recent,omitempty"`
}

// recentLen bounds periodUsage.Recent and accountRecord.RecentCharges.
const recentLen = 256

func pushRecent(list []string, id string) []string {
	list = append(list, id)
	if len(list) > recentLen {
		list = slices.Clone(list[len(list)-recentLen:])
	}
	return list
}

// Ledger states of a charge.
const (
	chargePending = "pending" // recorded; period usage not yet counted
	chargeCounted = "counted" // period usage counted; balance not yet debited
	chargeDone    = "done"    // fully applied
)

// charge is the ledger entry of one charged job ("<account>.charge.<job>").
type charge struct {
	Period int64     `json:"period"`
	Meter  string    `json:"meter"`
	Units  float64   `json:"units"`
	Cost   float64   `json:"cost"`
	State  string    `json:"state"`
	At     time.Time `json:"at"`
}

// period returns the billing period holding t: its start and the start of
// the next one (found by searching PeriodStart, to the second).
func (s *Service) period(t time.Time) (start, end time.Time) {
	start = s.cfg.PeriodStart(t)
	step := time.Hour
	hi := start.Add(step)
	for s.cfg.PeriodStart(hi).Equal(start) {
		if step > 20*365*24*time.Hour {
			return start, start.AddDate(0, 1, 0)
		}
		step *= 2
		hi = start.Add(step)
	}
	lo := start
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if s.cfg.PeriodStart(mid).Equal(start) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if next := s.cfg.PeriodStart(hi); next.After(start) && !next.After(hi) {
		return start, next
	}
	return start, hi
}

func usageKey(accountID string, periodStart time.Time) string {
	return accountID + ".period." + strconv.FormatInt(periodStart.Unix(), 10)
}

// readUsage returns the usage of the period starting at start (zero when
// nothing was charged).
func (s *Service) readUsage(ctx context.Context, accountID string, start time.Time) (periodUsage, error) {
	return kvcas.JSON(ctx, s.usage, usageKey(accountID, start), func(*periodUsage, bool) (bool, error) { return false, nil })
}

// Settle ends a job's reservation. With charged true it first charges the
// job, once per jobID whatever the number of calls: it adds units to the
// meter's total and cost to the period's usage (the period holding the
// first Settle), and deducts cost from the balance of a prepaid account. The
// charge goes through a ledger entry ("<account>.charge.<job>") whose state
// lets a Settle interrupted half-way be completed by a later one without
// counting anything twice; a repeated Settle uses the amounts of the first.
// With charged false it only releases the reservation (a failed job costs
// nothing). Settling a job that was never reserved is allowed. ErrNotFound
// for an unknown account; ErrInvalid for malformed ids, an empty meter or
// negative amounts.
func (s *Service) Settle(ctx context.Context, accountID, jobID string, charged bool, meter string, units float64, cost float64) error {
	if !validID(jobID) {
		return fmt.Errorf("%w: job id %q", ErrInvalid, jobID)
	}
	if _, err := s.getRecord(ctx, accountID); err != nil {
		return err
	}
	if charged {
		if meter == "" {
			return fmt.Errorf("%w: meter is required", ErrInvalid)
		}
		if !validMoney(&units) || !validMoney(&cost) {
			return fmt.Errorf("%w: units and cost must be non-negative numbers", ErrInvalid)
		}
		if err := s.charge(ctx, accountID, jobID, meter, units, cost); err != nil {
			return wrapOp("settle", err)
		}
	}
	if err := s.release(ctx, accountID, jobID); err != nil {
		return fmt.Errorf("account: settle: release: %w", err)
	}
	return nil
}

func (s *Service) charge(ctx context.Context, accountID, jobID, meter string, units, cost float64) error {
	ledgerKey := accountID + ".charge." + jobID
	start, _ := s.period(s.cfg.Now())
	c, err := kvcas.JSON(ctx, s.usage, ledgerKey, func(c *charge, exists bool) (bool, error) {
		if exists {
			return false, nil
		}
		*c = charge{Period: start.Unix(), Meter: meter, Units: units, Cost: roundMoney(cost), State: chargePending, At: s.cfg.Now().UTC()}
		return true, nil
	})
	if err != nil {
		return err
	}
	if c.State == chargePending {
		key := accountID + ".period." + strconv.FormatInt(c.Period, 10)
		_, err := kvcas.JSON(ctx, s.usage, key, func(u *periodUsage, _ bool) (bool, error) {
			if slices.Contains(u.Recent, jobID) {
				return false, nil
			}
			if u.Meters == nil {
				u.Meters = map[string]float64{}
			}
			u.Usage = roundMoney(u.Usage + c.Cost)
			u.Meters[c.Meter] = roundMoney(u.Meters[c.Meter] + c.Units)
			u.Recent = pushRecent(u.Recent, jobID)
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("count usage: %w", err)
		}
		if c, err = s.advance(ctx, ledgerKey, chargePending, chargeCounted); err != nil {
			return err
		}
	}
	if c.State == chargeCounted {
		_, err := kvcas.JSON(ctx, s.accounts, accountID, func(r *accountRecord, exists bool) (bool, error) {
			if !exists {
				return false, fmt.Errorf("%w: account %q", ErrNotFound, accountID)
			}
			if r.BillingType != BillingPrepaid || slices.Contains(r.RecentCharges, jobID) {
				return false, nil
			}
			r.PrepaidBalance = roundMoney(r.PrepaidBalance - c.Cost)
			r.RecentCharges = pushRecent(r.RecentCharges, jobID)
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("debit balance: %w", err)
		}
		if _, err := s.advance(ctx, ledgerKey, chargeCounted, chargeDone); err != nil {
			return err
		}
	}
	return nil
}

// advance moves a ledger entry from state from to state to (no-op when it
// is elsewhere already) and returns it.
func (s *Service) advance(ctx context.Context, key, from, to string) (charge, error) {
	c, err := kvcas.JSON(ctx, s.usage, key, func(c *charge, exists bool) (bool, error) {
		if !exists {
			return false, errors.New("ledger entry vanished")
		}
		if c.State != from {
			return false, nil
		}
		c.State = to
		return true, nil
	})
	if err != nil {
		return charge{}, fmt.Errorf("ledger %s: %w", key, err)
	}
	return c, nil
}

// Billing returns the account's billing state for the current period.
// ErrNotFound for an unknown account.
func (s *Service) Billing(ctx context.Context, accountID string) (Billing, error) {
	ar, err := s.getRecord(ctx, accountID)
	if err != nil {
		return Billing{}, err
	}
	start, end := s.period(s.cfg.Now())
	u, err := s.readUsage(ctx, accountID, start)
	if err != nil {
		return Billing{}, fmt.Errorf("account: billing: %w", err)
	}
	b := Billing{
		PeriodStart:        start,
		PeriodEnd:          end,
		PrepaidBalance:     ar.PrepaidBalance,
		CurrentPeriodUsage: u.Usage,
	}
	labels := MeterLabels()
	ids := meterIDs()
	var extra []string
	for id := range u.Meters {
		if !slices.Contains(ids, id) {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range append(ids, extra...) {
		label := labels[id]
		if label == "" {
			label = id
		}
		b.Meters = append(b.Meters, Meter{ID: id, Label: label, Unit: MeterUnit(id), TotalUsage: u.Meters[id]})
	}
	return b, nil
}
