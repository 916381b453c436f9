package worker

import (
	"context"
	"fmt"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// pool recycles host frames; its capacity bounds the frames in flight.
type pool chan *frame.HostFrame

func newPool(n int) pool {
	p := make(pool, n)
	for i := 0; i < n; i++ {
		p <- &frame.HostFrame{}
	}
	return p
}

func (p pool) get(ctx context.Context) (*frame.HostFrame, error) {
	select {
	case f := <-p:
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put never blocks: every frame came from this pool, so there is room.
func (p pool) put(f *frame.HostFrame) {
	select {
	case p <- f:
	default:
	}
}

func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// copyPair copies a render frame and its matte into frames of the two
// pools (for the foreground encoder).
func copyPair(ctx context.Context, colPool, alphaPool pool, col, alpha *frame.HostFrame) ([2]*frame.HostFrame, error) {
	var pair [2]*frame.HostFrame
	for i, src := range []*frame.HostFrame{col, alpha} {
		p := colPool
		if i == 1 {
			p = alphaPool
		}
		dst, err := p.get(ctx)
		if err != nil {
			return pair, err
		}
		dst.Format, dst.Width, dst.Height = src.Format, src.Width, src.Height
		dst.ColorSpace, dst.FullRange, dst.PTS = src.ColorSpace, src.FullRange, src.PTS
		if err := dst.Alloc(); err != nil {
			return pair, err
		}
		for k := range src.Planes {
			copy(dst.Planes[k], src.Planes[k])
		}
		pair[i] = dst
	}
	return pair, nil
}

// encodeAll writes every frame of in to enc, returning each to pool and
// calling each (when set) after every write, then closes enc. A nil enc is
// allowed when nothing is sent on in.
func encodeAll(ctx context.Context, in <-chan *frame.HostFrame, enc *codec.Encoder, pool pool, what string, each func()) error {
	for f := range in {
		if err := enc.Write(ctx, f); err != nil {
			return fmt.Errorf("worker: encode %s: %w", what, err)
		}
		pool.put(f)
		if each != nil {
			each()
		}
	}
	if enc == nil {
		return nil
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("worker: finish %s: %w", what, err)
	}
	return nil
}
