package product

import (
	"strings"

	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// Credit prices of the product API, in one place: the catalogue
// (products.go), the estimate and the job's plan (product_plan.go) and
// the settlement (productCost) all read them here. A job costs its
// frames (an image counts ImageCreditUnits) times a rate; a fast-mode vfx
// job costs half, rounded up; every job costs at least 1 credit.

// ImageCreditUnits is the number of frame units an image counts for in
// credit prices.
const ImageCreditUnits = 8

// Credit rates per frame.
const (
	rateVFX720     = 1 // vfx, max_resolution 720
	rateVFX1080    = 2 // vfx, max_resolution 1080
	rateFinish1080 = 1 // vfx_finish, target_resolution 1080
	rateFinish2160 = 3 // vfx_finish, target_resolution 2160
)

// price is what a product job costs: units (frames, or ImageCreditUnits
// for an image) at rate credits each, credits in all.
type price struct {
	units, rate, credits int64
}

// creditUnits is the frame units of a render: its frames (at least 1) for
// a video, ImageCreditUnits for an image.
func creditUnits(video bool, frames int) int64 {
	if video {
		return int64(max(frames, 1))
	}
	return ImageCreditUnits
}

// vfxPrice is the price of a vfx job.
func vfxPrice(video bool, frames, maxRes int, productMode string) price {
	p := price{units: creditUnits(video, frames), rate: rateVFX1080}
	if maxRes == 720 {
		p.rate = rateVFX720
	}
	c := p.units * p.rate
	if productMode == job.ModeFast {
		c = (c + 1) / 2
	}
	p.credits = max(c, 1)
	return p
}

// finishPrice is the price of a vfx_finish job.
func finishPrice(video bool, frames, target int) price {
	p := price{units: creditUnits(video, frames), rate: rateFinish1080}
	if target == job.FinishRes2160 {
		p.rate = rateFinish2160
	}
	p.credits = max(p.units*p.rate, 1)
	return p
}

// productCost is the credits a completed product job costs, from the
// frames its worker recorded.
func productCost(rec queue.Record, m *productMeta) int64 {
	video := strings.HasSuffix(rec.Outputs[job.OutputRender], ".mp4")
	if m.Product == job.ProductFinish {
		return finishPrice(video, rec.Frames, m.TargetResolution).credits
	}
	return vfxPrice(video, rec.Frames, m.MaxResolution, m.ProductMode).credits
}
