package worker

// MatteShare is the share of a select (video) or auto job's time that its
// matte pass takes (Pipeline.MatteProgress), the render pass taking the
// rest. Measured on a 240-frame 1080p select job on the CPU backend (see
// the README's Known limits for how it varies).
const MatteShare = 0.5

// JobFraction is how much of a job is done, in [0, 1], from its phases'
// counts as Pipeline reports them: matteDone of matteTotal steps of the
// matte pass (matteTotal 0: the job has none) and renderDone of
// renderTotal render frames. A job with a matte pass gives it MatteShare
// of the whole.
func JobFraction(matteDone, matteTotal, renderDone, renderTotal int) float64 {
	r := 0.0
	if renderTotal > 0 {
		r = min(max(float64(renderDone)/float64(renderTotal), 0), 1)
	}
	if matteTotal <= 0 {
		return r
	}
	m := min(max(float64(matteDone)/float64(matteTotal), 0), 1)
	return MatteShare*m + (1-MatteShare)*r
}
