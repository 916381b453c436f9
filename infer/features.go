package infer

import (
	"context"
	"errors"
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/encoding/protowire"
)

// ErrNoFeatures is a model whose card names no feature tensor.
var ErrNoFeatures = errors.New("infer: the model's card names no feature tensor")

// FeatureOutput is the name under which Load exposes a card's Features
// tensor as a graph output (a float32 copy of it).
const FeatureOutput = "vfx_features"

// Fields of ONNX messages that AddFeatureOutput writes (onnx.proto3).
const (
	nodeName    = 3  // NodeProto.name
	attrName    = 1  // AttributeProto.name
	attrType    = 20 // AttributeProto.type
	attrTypeInt = 2  // AttributeProto.AttributeType INT
	valueName   = 1  // ValueInfoProto.name
)

// AddFeatureOutput makes the intermediate tensor named tensor an output of
// the model's graph, as FeatureOutput: a Cast to float32 (so that an fp16
// graph gives float32 features too) and a graph output of that name. The
// rest of the graph is unchanged, so the model's own output is the same.
// It fails when the graph has no node that produces tensor.
func AddFeatureOutput(model []byte, tensor string) ([]byte, error) {
	found := false
	out, err := rewriteNested(model, []protowire.Number{modelGraph}, func(g []byte) ([]byte, error) {
		g, ok, err := addFeatureOutput(g, tensor)
		found = found || ok
		return g, err
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("infer: no node of the graph produces %q", tensor)
	}
	return out, nil
}

func addFeatureOutput(g []byte, tensor string) ([]byte, bool, error) {
	found := false
	err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		if f != graphNode {
			return nil
		}
		n, err := parseNode(val)
		if err != nil {
			return err
		}
		for _, o := range n.out {
			found = found || o == tensor
		}
		return nil
	})
	if err != nil || !found {
		return g, false, err
	}
	// Cast(to = FLOAT): tensor -> FeatureOutput.
	var to []byte
	to = protowire.AppendTag(to, attrName, protowire.BytesType)
	to = protowire.AppendString(to, "to")
	to = protowire.AppendTag(to, attrInt, protowire.VarintType)
	to = protowire.AppendVarint(to, onnxFloat)
	to = protowire.AppendTag(to, attrType, protowire.VarintType)
	to = protowire.AppendVarint(to, attrTypeInt)
	var node []byte
	node = protowire.AppendTag(node, nodeInput, protowire.BytesType)
	node = protowire.AppendString(node, tensor)
	node = protowire.AppendTag(node, nodeOutput, protowire.BytesType)
	node = protowire.AppendString(node, FeatureOutput)
	node = protowire.AppendTag(node, nodeName, protowire.BytesType)
	node = protowire.AppendString(node, FeatureOutput+"/Cast")
	node = protowire.AppendTag(node, nodeOpType, protowire.BytesType)
	node = protowire.AppendString(node, "Cast")
	node = appendBytesField(node, nodeAttribute, to)
	out := append([]byte(nil), g...)
	out = appendBytesField(out, graphNode, node)
	out = appendBytesField(out, graphOutput, floatValueInfo(FeatureOutput))
	return out, true, nil
}

// Features is one run's intermediate feature map: C planes of W x H
// values (channel-major, as the network's NCHW layout has them).
type Features struct {
	W, H, C int
	Data    []float32
}

// RunFeatures is Run that also returns the card's Features tensor
// (ErrNoFeatures when the model was loaded without one).
func (m *Model) RunFeatures(ctx context.Context, in, out []float32) (Features, error) {
	if !m.feat {
		return Features{}, ErrNoFeatures
	}
	var f Features
	err := m.run(ctx, in, out, func(v ort.Value) error {
		t, ok := v.(*ort.Tensor[float32])
		if !ok {
			return fmt.Errorf("infer: feature output is %T, not a float32 tensor", v)
		}
		s := t.GetShape()
		if len(s) != 4 || s[0] != 1 {
			return fmt.Errorf("infer: feature output of shape %v, want 1 x C x H x W", s)
		}
		f = Features{C: int(s[1]), H: int(s[2]), W: int(s[3])}
		f.Data = append([]float32(nil), t.GetData()...)
		return nil
	})
	return f, err
}

// HasFeatures reports whether the model's card names a feature tensor
// (matte.FeatureSegmenter).
func (m *Model) HasFeatures() bool { return m.feat }

// SegmentFeaturePlanes is SegmentFeatures with the feature map as plain
// values (its data, width, height and planes): the matte package's
// FeatureSegmenter, which knows no infer types.
func (m *Model) SegmentFeaturePlanes(ctx context.Context, rgb []float32, w, h int, dst []float32) ([]float32, int, int, int, error) {
	f, err := m.SegmentFeatures(ctx, rgb, w, h, dst)
	return f.Data, f.W, f.H, f.C, err
}
