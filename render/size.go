package render

import "math"

// OutputSize returns the output size for a w x h source (display
// orientation) and maxRes (the job's max_resolution, 720 or 1080): the
// shorter side is scaled down to maxRes when it is larger, never upscaled,
// and the aspect ratio is kept (the longer side is rounded to the nearest
// pixel). When even is true both sides are rounded to even numbers for
// yuv420p video: a scaled longer side to the nearest even number, an
// unscaled side down to the even number below it (never upscaling), never
// below 2 (a 1-pixel side becomes 2). maxRes <= 0 means no limit. A
// non-positive w or h gives (0, 0).
func OutputSize(w, h, maxRes int, even bool) (int, int) {
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	short, long := w, h
	if h < w {
		short, long = h, w
	}
	outShort, outLong := short, long
	if maxRes > 0 && short > maxRes {
		exact := float64(long) * float64(maxRes) / float64(short)
		outShort = maxRes
		if even {
			outLong = 2 * int(math.Round(exact/2))
		} else {
			outLong = int(math.Round(exact))
		}
		outLong = max(min(outLong, long), 1)
	}
	if even {
		outShort, outLong = evenDown(outShort), evenDown(outLong)
	}
	if h < w {
		return outLong, outShort
	}
	return outShort, outLong
}

// evenDown rounds v down to an even number, never below 2.
func evenDown(v int) int {
	return max(v&^1, 2)
}
