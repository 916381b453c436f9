package infer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrScale is a model that cannot run at the asked input size.
var ErrScale = errors.New("infer: model cannot run at that size")

// ONNX protobuf field numbers (onnx/onnx.proto3) that rescaling touches.
const (
	modelGraph       = 7  // ModelProto.graph
	graphNode        = 1  // GraphProto.node
	graphInput       = 11 // GraphProto.input
	graphOutput      = 12 // GraphProto.output
	graphValueInfo   = 13 // GraphProto.value_info
	nodeInput        = 1  // NodeProto.input
	nodeOutput       = 2  // NodeProto.output
	nodeOpType       = 4  // NodeProto.op_type
	nodeAttribute    = 5  // NodeProto.attribute
	attrTensor       = 5  // AttributeProto.t
	tensorDataType   = 2  // TensorProto.data_type
	tensorInt64Data  = 7  // TensorProto.int64_data
	tensorRawData    = 9  // TensorProto.raw_data
	valueType        = 2  // ValueInfoProto.type
	typeTensor       = 1  // TypeProto.tensor_type
	tensorTypeShape  = 2  // TypeProto.Tensor.shape
	shapeDim         = 1  // TensorShapeProto.dim
	dimValue         = 1  // TensorShapeProto.Dimension.dim_value
	dimParam         = 2  // TensorShapeProto.Dimension.dim_param
	onnxInt64        = 7  // TensorProto.DataType INT64
	resizeSizesInput = 3  // Resize's fourth input: the output sizes
)

// ScaleGraph rewrites an ONNX model exported for a fixed square input so
// that it runs at num/den of that size: the spatial sizes that its Resize
// nodes take from constants (IS-Net and U²-Net upsample each decoder
// stage to a size fixed at export) are scaled by num/den, the graph's
// input and output height and width become symbolic, and the exported
// intermediate shape hints (value_info), which would contradict the new
// size, are dropped. Weights are untouched. It fails with ErrScale when a
// size does not scale to a whole number or the graph has no such sizes.
func ScaleGraph(model []byte, num, den int) ([]byte, error) {
	if num <= 0 || den <= 0 {
		return nil, fmt.Errorf("%w: scale %d/%d", ErrScale, num, den)
	}
	var out []byte
	found := false
	err := eachField(model, func(f protowire.Number, raw, val []byte) error {
		if f != modelGraph {
			out = append(out, raw...)
			return nil
		}
		if found {
			return fmt.Errorf("%w: two graphs", ErrScale)
		}
		found = true
		g, err := scaleGraph(val, int64(num), int64(den))
		if err != nil {
			return err
		}
		out = appendBytesField(out, modelGraph, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: no graph in the model", ErrScale)
	}
	return out, nil
}

type onnxNode struct {
	op      string
	in, out []string
}

func parseNode(b []byte) (onnxNode, error) {
	var n onnxNode
	err := eachField(b, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case nodeInput:
			n.in = append(n.in, string(val))
		case nodeOutput:
			n.out = append(n.out, string(val))
		case nodeOpType:
			n.op = string(val)
		}
		return nil
	})
	return n, err
}

func scaleGraph(g []byte, num, den int64) ([]byte, error) {
	// The Resize nodes' sizes come from Concat(batch and channels of the
	// input's shape, a Constant holding the spatial size): find those
	// constants.
	var nodes []onnxNode
	if err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		if f != graphNode {
			return nil
		}
		n, err := parseNode(val)
		nodes = append(nodes, n)
		return err
	}); err != nil {
		return nil, err
	}
	sizes := map[string]bool{}
	for _, n := range nodes {
		if n.op == "Resize" && len(n.in) > resizeSizesInput && n.in[resizeSizesInput] != "" {
			sizes[n.in[resizeSizesInput]] = true
		}
	}
	consts := map[string]bool{}
	for _, n := range nodes {
		if n.op == "Concat" && len(n.out) == 1 && sizes[n.out[0]] && len(n.in) == 2 {
			consts[n.in[1]] = true
		}
	}
	if len(consts) == 0 || len(consts) != len(sizes) {
		return nil, fmt.Errorf("%w: %d Resize sizes, %d of them Concat(shape, constant)", ErrScale, len(sizes), len(consts))
	}
	scaled := 0
	var out []byte
	err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case graphNode:
			n, err := parseNode(val)
			if err != nil {
				return err
			}
			if n.op != "Constant" || len(n.out) != 1 || !consts[n.out[0]] {
				out = append(out, raw...)
				return nil
			}
			b, err := rewriteNested(val, []protowire.Number{nodeAttribute, attrTensor}, func(t []byte) ([]byte, error) {
				return scaleInt64Tensor(t, num, den)
			})
			if err != nil {
				return err
			}
			scaled++
			out = appendBytesField(out, f, b)
		case graphInput, graphOutput:
			b, err := rewriteNested(val, []protowire.Number{valueType, typeTensor, tensorTypeShape}, symbolicHW)
			if err != nil {
				return err
			}
			out = appendBytesField(out, f, b)
		case graphValueInfo:
		default:
			out = append(out, raw...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if scaled != len(consts) {
		return nil, fmt.Errorf("%w: %d of %d size constants found as Constant nodes", ErrScale, scaled, len(consts))
	}
	return out, nil
}

// scaleInt64Tensor multiplies every value of an int64 TensorProto by
// num/den.
func scaleInt64Tensor(t []byte, num, den int64) ([]byte, error) {
	scale := func(x int64) (int64, error) {
		if x*num%den != 0 {
			return 0, fmt.Errorf("%w: size %d times %d/%d is not whole", ErrScale, x, num, den)
		}
		return x * num / den, nil
	}
	var out []byte
	typ := int64(-1)
	err := eachField(t, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case tensorDataType:
			v, n := protowire.ConsumeVarint(raw[protowire.SizeTag(f):])
			if n < 0 {
				return fmt.Errorf("%w: bad tensor type", ErrScale)
			}
			typ = int64(v)
			out = append(out, raw...)
		case tensorRawData:
			if typ != onnxInt64 || len(val)%8 != 0 {
				return fmt.Errorf("%w: size constant is not int64", ErrScale)
			}
			b := append([]byte(nil), val...)
			for i := 0; i < len(b); i += 8 {
				y, err := scale(int64(binary.LittleEndian.Uint64(b[i:])))
				if err != nil {
					return err
				}
				binary.LittleEndian.PutUint64(b[i:], uint64(y))
			}
			out = appendBytesField(out, f, b)
		case tensorInt64Data:
			// Packed varints.
			var b []byte
			for len(val) > 0 {
				v, n := protowire.ConsumeVarint(val)
				if n < 0 {
					return fmt.Errorf("%w: bad int64 data", ErrScale)
				}
				y, err := scale(int64(v))
				if err != nil {
					return err
				}
				b = protowire.AppendVarint(b, uint64(y))
				val = val[n:]
			}
			out = appendBytesField(out, f, b)
		default:
			out = append(out, raw...)
		}
		return nil
	})
	return out, err
}

// symbolicHW makes the last two dimensions of a TensorShapeProto symbolic
// ("height", "width").
func symbolicHW(s []byte) ([]byte, error) {
	var dims [][]byte
	var rest []byte
	if err := eachField(s, func(f protowire.Number, raw, val []byte) error {
		if f == shapeDim {
			dims = append(dims, val)
		} else {
			rest = append(rest, raw...)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(dims) != 4 {
		return nil, fmt.Errorf("%w: input or output of rank %d, want NCHW", ErrScale, len(dims))
	}
	var out []byte
	for k, d := range dims {
		if k >= 2 {
			d = protowire.AppendString(protowire.AppendTag(nil, dimParam, protowire.BytesType), [...]string{"height", "width"}[k-2])
		}
		out = appendBytesField(out, shapeDim, d)
	}
	return append(out, rest...), nil
}

// rewriteNested applies fn to the message found by following path
// (length-delimited fields, each occurrence) inside b.
func rewriteNested(b []byte, path []protowire.Number, fn func([]byte) ([]byte, error)) ([]byte, error) {
	if len(path) == 0 {
		return fn(b)
	}
	var out []byte
	err := eachField(b, func(f protowire.Number, raw, val []byte) error {
		if f != path[0] || val == nil {
			out = append(out, raw...)
			return nil
		}
		v, err := rewriteNested(val, path[1:], fn)
		if err != nil {
			return err
		}
		out = appendBytesField(out, f, v)
		return nil
	})
	return out, err
}

// eachField calls fn for each field of a protobuf message with its raw
// bytes (tag included) and, for length-delimited fields, its value.
func eachField(b []byte, fn func(f protowire.Number, raw, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: not an ONNX model (bad protobuf tag)", ErrScale)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("%w: not an ONNX model (bad protobuf field %d)", ErrScale, num)
		}
		var val []byte
		if typ == protowire.BytesType {
			val, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, b[:n+m], val); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

func appendBytesField(b []byte, f protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
