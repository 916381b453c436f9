// Package render is the per-frame look of vfx: it turns a source frame, an
// alpha matte, a prompt and an optional reference image into a relit
// composite, all on a kernels.Device so that the same code runs on the CPU
// reference backend and on CUDA.
//
// The look is classical, explainable image processing (docs/architecture.md, The look):
//
//   - Background B: the reference image cover-fitted to the output, or a
//     backdrop synthesised on the host from the prompt (scene, time of day,
//     named colours) and varied by the seed.
//   - Lighting: 9 spherical-harmonic coefficients per channel, the
//     irradiance of B seen as an environment (SHProjectEnv convolved with
//     the clamped-cosine lobe) mixed with the lights parsed from the prompt.
//   - Relight: pseudo-normals inflated from the matte's distance field plus
//     a little high-pass luminance relief; the old shading is a
//     least-squares SH fit of the subject's luminance; the ratio
//     E_new/E_old, normalised to keep the subject's exposure, is the gain.
//   - Harmonise: Reinhard lαβ statistics of the relit subject are moved part
//     of the way toward the background's.
//   - Composite: one fused full-resolution pass (kernels GainComposite)
//     applies the low-resolution gain, composites over B and adds light
//     wrap. Everything else runs at low resolution (shorter side 270 px).
//
// render does no file or network I/O and never logs; it returns errors
// prefixed "render: ".
package render
