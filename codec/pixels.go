package codec

// copyRotate copies a w x h picture of sbpp-byte pixels from src into dst,
// rotated clockwise by rot (0, 90, 180, 270). With dbpp == sbpp whole
// pixels are copied; with dbpp == 1 only byte ch of each pixel is (channel
// extraction). dst is laid out for the rotated size.
func copyRotate(dst []byte, dstStride int, src []byte, srcStride, w, h, sbpp, dbpp, ch, rot int) {
	if rot == 0 && sbpp == dbpp {
		n := w * sbpp
		for y := 0; y < h; y++ {
			copy(dst[y*dstStride:y*dstStride+n], src[y*srcStride:y*srcStride+n])
		}
		return
	}
	if dbpp == sbpp {
		ch = 0
	}
	// Destination position of source (x, y): base + x*dx + y*dy.
	var base, dx, dy int
	switch rot {
	case 90: // (x, y) -> (h-1-y, x)
		base, dx, dy = (h-1)*dbpp, dstStride, -dbpp
	case 180: // (x, y) -> (w-1-x, h-1-y)
		base, dx, dy = (h-1)*dstStride+(w-1)*dbpp, -dbpp, -dstStride
	case 270: // (x, y) -> (y, w-1-x)
		base, dx, dy = (w-1)*dstStride, -dstStride, dbpp
	default:
		base, dx, dy = 0, dbpp, dstStride
	}
	// Bands of source rows keep both sides' cache lines warm when the
	// rotation turns rows into columns.
	const band = 16
	for y0 := 0; y0 < h; y0 += band {
		y1 := min(y0+band, h)
		for x := 0; x < w; x++ {
			s := y0*srcStride + x*sbpp + ch
			d := base + x*dx + y0*dy
			for y := y0; y < y1; y++ {
				if dbpp == 1 {
					dst[d] = src[s]
				} else {
					copy(dst[d:d+dbpp], src[s:s+dbpp])
				}
				s += srcStride
				d += dy
			}
		}
	}
}

// allOpaque reports whether every byte ch of the w x h bpp-byte pixels is 255.
func allOpaque(src []byte, stride, w, h, bpp, ch int) bool {
	for y := 0; y < h; y++ {
		row := src[y*stride : y*stride+w*bpp]
		for x := ch; x < len(row); x += bpp {
			if row[x] != 255 {
				return false
			}
		}
	}
	return true
}
