package codec

// This file holds the few FFmpeg calls that go-astiav v0.16.0 does not
// expose (frame plane pointers, swscale colour details, pixel-format flags).
// Every C object created here has its free next to it.

/*
#cgo pkg-config: libavutil libswscale libavcodec
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>

static uint8_t *vfx_frame_data(AVFrame *f, int i) { return f->data[i]; }
static int vfx_frame_linesize(AVFrame *f, int i) { return f->linesize[i]; }
static int64_t vfx_frame_pts(AVFrame *f) {
	if (f->pts != AV_NOPTS_VALUE) return f->pts;
	return f->best_effort_timestamp;
}
static int vfx_frame_make_writable(AVFrame *f) { return av_frame_make_writable(f); }
static void vfx_frame_set_color(AVFrame *f, int prim, int trc, int space, int range) {
	f->color_primaries = (enum AVColorPrimaries)prim;
	f->color_trc = (enum AVColorTransferCharacteristic)trc;
	f->colorspace = (enum AVColorSpace)space;
	f->color_range = (enum AVColorRange)range;
}
static int vfx_pix_fmt_has_alpha(int fmt) {
	const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)fmt);
	return d != NULL && (d->flags & AV_PIX_FMT_FLAG_ALPHA) != 0;
}
static int vfx_pix_fmt_is_rgb(int fmt) {
	const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)fmt);
	return d != NULL && (d->flags & AV_PIX_FMT_FLAG_RGB) != 0;
}
static int vfx_pix_fmt_depth(int fmt) {
	const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)fmt);
	int m = 0;
	if (d == NULL) return 0;
	for (int i = 0; i < d->nb_components; i++) {
		if (d->comp[i].depth > m) m = d->comp[i].depth;
	}
	return m;
}
static struct SwsContext *vfx_sws_new(int sw, int sh, int sf, int dw, int dh, int df, int flags,
		int scs, int sfull, int dcs, int dfull, int *ret) {
	struct SwsContext *c = sws_getContext(sw, sh, (enum AVPixelFormat)sf, dw, dh, (enum AVPixelFormat)df,
		flags, NULL, NULL, NULL);
	if (c == NULL) { *ret = -1; return NULL; }
	*ret = sws_setColorspaceDetails(c, sws_getCoefficients(scs), sfull, sws_getCoefficients(dcs), dfull,
		0, 1 << 16, 1 << 16);
	return c;
}
static int vfx_sws_scale(struct SwsContext *c, AVFrame *src, AVFrame *dst) {
	return sws_scale(c, (const uint8_t *const *)src->data, src->linesize, 0, src->height, dst->data, dst->linesize);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/asticode/go-astiav"
)

// swscale flags (libswscale/swscale.h).
const (
	swsBicubic       = C.SWS_BICUBIC
	swsLanczos       = C.SWS_LANCZOS
	swsFullChrHInt   = C.SWS_FULL_CHR_H_INT
	swsFullChrHInp   = C.SWS_FULL_CHR_H_INP
	swsCoeffBT709    = C.SWS_CS_ITU709
	swsCoeffBT601    = C.SWS_CS_ITU601
	swsCoeffFCC      = C.SWS_CS_FCC
	swsCoeffSMPTE240 = C.SWS_CS_SMPTE240M
	swsCoeffBT2020   = C.SWS_CS_BT2020
)

func cFrame(f *astiav.Frame) *C.AVFrame { return (*C.AVFrame)(f.UnsafePointer()) }

// planeOf returns plane i of an FFmpeg frame as a Go slice over C memory
// (rows lines of linesize bytes) and its stride. The slice is valid while
// the frame holds its buffers.
func planeOf(f *astiav.Frame, i, rows int) ([]byte, int, error) {
	cf := cFrame(f)
	p := C.vfx_frame_data(cf, C.int(i))
	ls := int(C.vfx_frame_linesize(cf, C.int(i)))
	if p == nil || ls <= 0 || rows <= 0 {
		return nil, 0, fmt.Errorf("plane %d missing (linesize %d)", i, ls)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), ls*rows), ls, nil
}

func framePTS(f *astiav.Frame) int64 { return int64(C.vfx_frame_pts(cFrame(f))) }

func makeWritable(f *astiav.Frame) error {
	if r := C.vfx_frame_make_writable(cFrame(f)); r < 0 {
		return astiav.Error(r)
	}
	return nil
}

// setFrameBT709 tags an FFmpeg frame BT.709 (primaries, transfer and
// matrix) in limited or full range: encoders such as prores_ks write the
// frame's tags, not the codec context's, into their bitstream.
func setFrameBT709(f *astiav.Frame, full bool) {
	rng := C.AVCOL_RANGE_MPEG
	if full {
		rng = C.AVCOL_RANGE_JPEG
	}
	C.vfx_frame_set_color(cFrame(f), C.AVCOL_PRI_BT709, C.AVCOL_TRC_BT709, C.AVCOL_SPC_BT709, C.int(rng))
}

func pixFmtHasAlpha(p astiav.PixelFormat) bool { return C.vfx_pix_fmt_has_alpha(C.int(p)) != 0 }
func pixFmtIsRGB(p astiav.PixelFormat) bool    { return C.vfx_pix_fmt_is_rgb(C.int(p)) != 0 }

// pixFmtDepth is the largest bit depth of p's components (0 if unknown).
func pixFmtDepth(p astiav.PixelFormat) int { return int(C.vfx_pix_fmt_depth(C.int(p))) }

// scaler is a swscale context with explicit matrices and ranges.
type scaler struct {
	c                      *C.struct_SwsContext
	sw, sh, dw, dh         int
	sf, df                 astiav.PixelFormat
	flags                  int
	scs, sfull, dcs, dfull int
}

// scalerParams describes a conversion.
type scalerParams struct {
	sw, sh int
	sf     astiav.PixelFormat
	dw, dh int
	df     astiav.PixelFormat
	flags  int
	// swscale coefficient ids and full-range flags of source and destination.
	scs, dcs     int
	sfull, dfull bool
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// get returns a scaler for p, reusing s when the parameters match. The
// previous context is freed when replaced.
func (s *scaler) get(p scalerParams) error {
	if s.c != nil && s.sw == p.sw && s.sh == p.sh && s.sf == p.sf && s.dw == p.dw && s.dh == p.dh &&
		s.df == p.df && s.flags == p.flags && s.scs == p.scs && s.dcs == p.dcs &&
		s.sfull == b2i(p.sfull) && s.dfull == b2i(p.dfull) {
		return nil
	}
	s.free()
	var ret C.int
	c := C.vfx_sws_new(C.int(p.sw), C.int(p.sh), C.int(p.sf), C.int(p.dw), C.int(p.dh), C.int(p.df),
		C.int(p.flags), C.int(p.scs), C.int(b2i(p.sfull)), C.int(p.dcs), C.int(b2i(p.dfull)), &ret)
	if c == nil {
		return fmt.Errorf("swscale cannot convert %s %dx%d to %s %dx%d", p.sf, p.sw, p.sh, p.df, p.dw, p.dh)
	}
	// ret < 0 only means the colour details could not be applied (a
	// conversion without a matrix, e.g. gray to gray); the context works.
	*s = scaler{c: c, sw: p.sw, sh: p.sh, sf: p.sf, dw: p.dw, dh: p.dh, df: p.df, flags: p.flags,
		scs: p.scs, sfull: b2i(p.sfull), dcs: p.dcs, dfull: b2i(p.dfull)}
	return nil
}

func (s *scaler) scale(src, dst *astiav.Frame) error {
	if s.c == nil {
		return errors.New("no scaler")
	}
	if r := C.vfx_sws_scale(s.c, cFrame(src), cFrame(dst)); r <= 0 {
		return fmt.Errorf("swscale returned %d", int(r))
	}
	return nil
}

func (s *scaler) free() {
	if s.c != nil {
		C.sws_freeContext(s.c)
		s.c = nil
	}
}
