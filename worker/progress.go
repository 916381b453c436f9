package worker

// The shares of a select (video) or auto job's time that its phases take,
// for JobFraction: decoding the source at the flow size with the
// segmentation network on the frames its schedule picks, then making each
// frame's matte (the two halves of Pipeline.MatteProgress), then the
// render frames (Pipeline.Progress). Measured on a 240-frame 1080p select
// job on the CPU backend (network on every 4th frame): 724 s, 47 s and
// 116 s of a 910 s job (see the README's Known limits: on a GPU, where
// the network is cheap, the matte pass takes a smaller share).
const (
	MatteDecodeShare = 0.80
	MatteMakeShare   = 0.05
	RenderShare      = 1 - MatteDecodeShare - MatteMakeShare
)

// JobFraction is how much of a job is done, in [0, 1], from its phases'
// counts as Pipeline reports them: matteDone of matteTotal steps of the
// matte pass (matteTotal 0: the job has none; its first half decodes,
// its second makes the mattes) and renderDone of renderTotal render
// frames. A job without a matte pass is its render frames alone.
func JobFraction(matteDone, matteTotal, renderDone, renderTotal int) float64 {
	r := 0.0
	if renderTotal > 0 {
		r = clamp01(float64(renderDone) / float64(renderTotal))
	}
	if matteTotal <= 0 {
		return r
	}
	half := float64(matteTotal) / 2
	d := clamp01(float64(matteDone) / half)
	m := clamp01((float64(matteDone) - half) / half)
	return MatteDecodeShare*d + MatteMakeShare*m + RenderShare*r
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }
