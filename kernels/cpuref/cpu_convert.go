package cpuref

import (
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
)

// Upload converts src into dst (see Device.Upload). Errors: an invalid
// frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Upload(dst Image, src *frame.HostFrame) error {
	const op = "Upload"
	m, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	if m.w != src.Width || m.h != src.Height {
		return shapeErr(op, "frame %dx%d into image %s", src.Width, src.Height, dims(m))
	}
	switch src.Format {
	case frame.YUV420P:
		if m.c != 3 {
			return shapeErr(op, "yuv420p into %d channels", m.c)
		}
		d.uploadYUV(m, src)
	case frame.RGB24:
		if m.c != 3 {
			return shapeErr(op, "rgb24 into %d channels", m.c)
		}
		d.uploadRGB(m, src)
	case frame.Gray8:
		if m.c != 1 {
			return shapeErr(op, "gray8 into %d channels", m.c)
		}
		d.uploadGray(m, src)
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, src.Format)
	}
	return nil
}

func (d *CPU) uploadYUV(m *cpuImage, f *frame.HostFrame) {
	csi, fri := rows.FullRangeIdx(f)
	t := &d.lut.YUVIn[csi][fri]
	lut := &d.lut.EOTFExt
	w, h := m.w, m.h
	cw := (w + 1) / 2
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	band := BandRows(w)
	band += band & 1
	d.parallel(h, band, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			cy := y >> 1
			rows.YUVRow(R[y*w:][:w], G[y*w:][:w], B[y*w:][:w],
				f.Planes[0][y*f.Strides[0]:][:w],
				f.Planes[1][cy*f.Strides[1]:][:cw],
				f.Planes[2][cy*f.Strides[2]:][:cw], t, lut)
		}
	})
}

func (d *CPU) uploadRGB(m *cpuImage, f *frame.HostFrame) {
	lut := &d.lut.EOTF8
	w, h := m.w, m.h
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			rows.RGBRow(R[y*w:][:w], G[y*w:][:w], B[y*w:][:w], f.Planes[0][y*f.Strides[0]:][:3*w], lut)
		}
	})
}

func (d *CPU) uploadGray(m *cpuImage, f *frame.HostFrame) {
	w, h := m.w, m.h
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			// GrayRow through d.lut.Gray8, bit for bit.
			rows.Gray8Row(m.pix[y*w:][:w], f.Planes[0][y*f.Strides[0]:][:w])
		}
	})
}

// Download converts src into dst (see Device.Download). Errors: an
// invalid frame, a foreign image, or a size/channel mismatch (ErrShape).
func (d *CPU) Download(dst *frame.HostFrame, src Image) error {
	const op = "Download"
	m, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	if m.w != dst.Width || m.h != dst.Height {
		return shapeErr(op, "image %s into frame %dx%d", dims(m), dst.Width, dst.Height)
	}
	switch dst.Format {
	case frame.YUV420P:
		if m.c != 3 {
			return shapeErr(op, "%d channels into yuv420p", m.c)
		}
		d.downloadYUV(dst, m)
	case frame.RGB24:
		if m.c != 3 {
			return shapeErr(op, "%d channels into rgb24", m.c)
		}
		d.downloadRGB(dst, m)
	case frame.Gray8:
		if m.c != 1 {
			return shapeErr(op, "%d channels into gray8", m.c)
		}
		d.downloadGray(dst, m)
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, dst.Format)
	}
	return nil
}

func (d *CPU) downloadRGB(f *frame.HostFrame, m *cpuImage) {
	t := d.lut
	w, h := m.w, m.h
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			t.RGBOutRow(f.Planes[0][y*f.Strides[0]:][:3*w], R[y*w:][:w], G[y*w:][:w], B[y*w:][:w])
		}
	})
}

func (d *CPU) downloadGray(f *frame.HostFrame, m *cpuImage) {
	w, h := m.w, m.h
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			rows.GrayOutRow(f.Planes[0][y*f.Strides[0]:][:w], m.pix[y*w:][:w])
		}
	})
}

func (d *CPU) downloadYUV(f *frame.HostFrame, m *cpuImage) {
	csi, fri := rows.FullRangeIdx(f)
	k := &d.lut.YUVOut[csi][fri]
	ob := &d.lut.OETFU
	w, h := m.w, m.h
	cw := (w + 1) / 2
	n := w * h
	R, G, B := m.pix[:n], m.pix[n:2*n], m.pix[2*n:3*n]
	band := BandRows(w)
	band += band & 1
	d.parallel(h, band, func(_, y0, y1 int) {
		for y := y0; y < y1; y += 2 {
			cy := y >> 1
			y2 := min(y+1, h-1) // odd height: the last row pairs with itself
			rows.YUVOutRows(k, ob,
				f.Planes[0][y*f.Strides[0]:][:w], f.Planes[0][y2*f.Strides[0]:][:w],
				f.Planes[1][cy*f.Strides[1]:][:cw], f.Planes[2][cy*f.Strides[2]:][:cw],
				R[y*w:][:w], G[y*w:][:w], B[y*w:][:w],
				R[y2*w:][:w], G[y2*w:][:w], B[y2*w:][:w])
		}
	})
}
