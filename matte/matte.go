// Package matte makes the alpha matte of a job. A matte is 1 = keep the
// subject, 0 = replace it with the background.
//
// The alpha modes and the rules a supplied matte must meet (kind, size,
// frame count, keyframe index and format) are part of the job contract:
// see job.AlphaMode, job.CheckCustom, job.CheckKeyframe and
// job.CheckKeyframeFormat. This package does the work of the two modes
// that compute a matte: select (one keyframe matte propagated through a
// video by optical flow and colour models, see Propagate) and auto (no
// matte: a chroma key, a clean-plate difference or a centre-prior
// segmentation, see PlanAuto). Fill needs no matte and custom uses the
// one given.
package matte
