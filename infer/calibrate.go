package infer

import (
	"context"
	"fmt"
	"math"

	ort "github.com/yalue/onnxruntime_go"
)

// Calibrate measures, on n pictures, the ranges of c's activations that
// QuantizeGraph needs (CalibrationTensors), in fp32 on the CPU: on each
// picture, each activation's range holds the share pct of its values
// (the rest, the rarest extremes, are clipped; 1 keeps every value), found
// from a histogram of 8192 bins; the range of a tensor is the mean over
// the pictures. picture(i) gives picture i as planar RGB in [0,1], w x h.
// Calibration runs keep every activation of a run in memory (IS-Net at
// 1024: about 3 GB).
func (r *Runtime) Calibrate(ctx context.Context, c Card, pct float64, n int, picture func(i int) (rgb []float32, w, h int, err error)) (Ranges, error) {
	if !(pct > 0.5 && pct <= 1) || n < 1 {
		return nil, fmt.Errorf("infer: calibrate: percentile %g (want above 0.5, at most 1) and %d pictures (want 1 or more)", pct, n)
	}
	data, err := c.Read(r.o.Dir)
	if err != nil {
		return nil, err
	}
	if data, _, err = c.graph(data, false, true, []string{c.Output}); err != nil {
		return nil, err
	}
	names, err := CalibrationTensors(data)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: %s has no Relu, Add or chained Conv", ErrQuant, c.Name)
	}
	if data, err = AddOutputs(data, names); err != nil {
		return nil, err
	}
	so, err := sessionOptions(r.o.Threads)
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(data, []string{c.Input}, append([]string{c.Output}, names...), so)
	if err != nil {
		return nil, fmt.Errorf("infer: calibrate %s: session: %w", c.Name, err)
	}
	defer sess.Destroy()
	sums := make([][2]float64, len(names))
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rgb, w, h, err := picture(i)
		if err != nil {
			return nil, err
		}
		if w <= 0 || h <= 0 || len(rgb) != 3*w*h {
			return nil, fmt.Errorf("%w: calibration picture %d: %dx%d with %d values", ErrShape, i, w, h, len(rgb))
		}
		in, err := ort.NewTensor(ort.NewShape(1, 3, int64(c.Height), int64(c.Width)), c.input(rgb, w, h))
		if err != nil {
			return nil, err
		}
		outs := make([]ort.Value, len(names)+1)
		err = sess.Run([]ort.Value{in}, outs)
		in.Destroy()
		if err == nil {
			for k := range names {
				t, ok := outs[k+1].(*ort.Tensor[float32])
				if !ok {
					err = fmt.Errorf("infer: calibrate: %s is not a float tensor", names[k])
					break
				}
				lo, hi := clippedRange(t.GetData(), pct)
				sums[k][0] += float64(lo)
				sums[k][1] += float64(hi)
			}
		}
		for _, o := range outs {
			if o != nil {
				o.Destroy()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("infer: calibrate %s, picture %d: %w", c.Name, i, err)
		}
	}
	rg := Ranges{}
	for k, name := range names {
		rg[name] = [2]float32{float32(sums[k][0] / float64(n)), float32(sums[k][1] / float64(n))}
	}
	return rg, nil
}

// clippedRange is the range [lo, hi] of v that leaves out at most a share
// 1−pct of its values at each end (to 1/8192 of the whole range).
func clippedRange(v []float32, pct float64) (float32, float32) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, x := range v {
		lo = min(lo, x)
		hi = max(hi, x)
	}
	if !(hi > lo) {
		return lo, hi
	}
	const bins = 8192
	var hist [bins]int
	w := (hi - lo) / bins
	for _, x := range v {
		hist[min(bins-1, int((x-lo)/w))]++
	}
	tail := int(float64(len(v)) * (1 - pct))
	plo, phi := lo, hi
	for k, c := bins-1, 0; k >= 0; k-- {
		if c += hist[k]; c > tail {
			phi = lo + float32(k+1)*w
			break
		}
	}
	for k, c := 0, 0; k < bins; k++ {
		if c += hist[k]; c > tail {
			plo = lo + float32(k)*w
			break
		}
	}
	return plo, phi
}
