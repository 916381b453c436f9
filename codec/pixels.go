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

// alphaExtremes reports whether the alpha sample at byte ch of every one
// of the w x h bpp-byte pixels is opaque and whether every one is clear.
// Samples are 8-bit, or 16-bit little-endian when size is 2; a 16-bit
// sample counts as opaque or clear when it rounds to 255 or 0 in 8 bits
// (swscale may widen a 10- or 12-bit alpha to a little under 65535).
func alphaExtremes(src []byte, stride, w, h, bpp, ch, size int) (opaque, clear bool) {
	hi, lo := 255, 0
	if size == 2 {
		hi, lo = 65407, 128
	}
	opaque, clear = true, true
	for y := 0; y < h; y++ {
		row := src[y*stride : y*stride+w*bpp]
		for x := ch; x < len(row); x += bpp {
			v := int(row[x])
			if size == 2 {
				v |= int(row[x+1]) << 8
			}
			opaque = opaque && v >= hi
			clear = clear && v <= lo
			if !opaque && !clear {
				return false, false
			}
		}
	}
	return opaque, clear
}

// matteOfRGBA writes the matte of the w x h RGBA pixels of src (8-bit,
// or 16-bit little-endian when size is 2) into dst, one sample of the same
// size per pixel: the alpha when useAlpha, else the Rec.709 luminance of
// the code values, rounded.
func matteOfRGBA(dst []byte, dstStride int, src []byte, srcStride, w, h, size int, useAlpha bool) {
	bpp := 4 * size
	for y := 0; y < h; y++ {
		s, d := src[y*srcStride:y*srcStride+bpp*w], dst[y*dstStride:y*dstStride+size*w]
		for x := 0; x < w; x++ {
			p := s[bpp*x : bpp*x+bpp]
			if useAlpha {
				copy(d[size*x:size*x+size], p[3*size:4*size])
				continue
			}
			if size == 1 {
				d[x] = uint8(0.2126*float32(p[0]) + 0.7152*float32(p[1]) + 0.0722*float32(p[2]) + 0.5)
				continue
			}
			r := float32(uint16(p[0]) | uint16(p[1])<<8)
			g := float32(uint16(p[2]) | uint16(p[3])<<8)
			b := float32(uint16(p[4]) | uint16(p[5])<<8)
			v := uint16(min(0.2126*r+0.7152*g+0.0722*b+0.5, 65535))
			d[2*x], d[2*x+1] = byte(v), byte(v>>8)
		}
	}
}

// widen writes the w x h 8-bit samples of src into dst as 16-bit
// little-endian ones, v*257 (so 255 becomes 65535).
func widen(dst []byte, dstStride int, src []byte, srcStride, w, h int) {
	for y := 0; y < h; y++ {
		s, d := src[y*srcStride:y*srcStride+w], dst[y*dstStride:y*dstStride+2*w]
		for x, v := range s {
			d[2*x], d[2*x+1] = v, v
		}
	}
}
