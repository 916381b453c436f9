package infer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// ONNX fields and values that Float32Graph touches (onnx/onnx.proto3).
const (
	graphInitializer = 5  // GraphProto.initializer
	attrInt          = 3  // AttributeProto.i (Cast's "to")
	tensorInt32Data  = 5  // TensorProto.int32_data (fp16 bit patterns)
	typeElemType     = 1  // TypeProto.Tensor.elem_type
	onnxFloat        = 1  // TensorProto.DataType FLOAT
	onnxFloat16      = 10 // TensorProto.DataType FLOAT16
)

// Float32Graph rewrites an ONNX model whose weights and activations are
// fp16 into the same network in fp32: every fp16 initializer and Constant
// becomes fp32 (exactly: fp16 values are fp32 values), every Cast to fp16
// becomes a Cast to fp32, and fp16 graph inputs, outputs and shape hints
// become fp32. ONNX Runtime's CPU provider has no fp16 kernels for most
// ops on x86: it wraps each fp16 node in casts, so an fp16 model spends
// part of every run converting activations. The converted graph is the
// same network without those casts, at twice the weights' memory; its
// activations are no longer rounded to fp16 between ops (IS-Net's maps
// differ by at most 3.4e-4: TestFloat32Model). Models with no fp16 tensor
// come back unchanged in meaning.
func Float32Graph(model []byte) ([]byte, error) {
	return rewriteFields(model, func(f protowire.Number, raw, val []byte) ([]byte, error) {
		if f != modelGraph || val == nil {
			return raw, nil
		}
		g, err := rewriteFields(val, float32GraphField)
		if err != nil {
			return nil, err
		}
		return appendBytesField(nil, f, g), nil
	})
}

func float32GraphField(f protowire.Number, raw, val []byte) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	switch f {
	case graphInitializer:
		b, err = float32Tensor(val)
	case graphNode:
		b, err = float32Node(val)
	case graphInput, graphOutput, graphValueInfo:
		b, err = rewriteNested(val, []protowire.Number{valueType, typeTensor}, func(t []byte) ([]byte, error) {
			return rewriteFields(t, func(f protowire.Number, raw, _ []byte) ([]byte, error) {
				return float32Enum(f, typeElemType, raw), nil
			})
		})
	default:
		return raw, nil
	}
	if err != nil {
		return nil, err
	}
	return appendBytesField(nil, f, b), nil
}

// float32Node turns a Cast to fp16 into a Cast to fp32 and converts the
// tensors held in a node's attributes (Constant's value).
func float32Node(n []byte) ([]byte, error) {
	node, err := parseNode(n)
	if err != nil {
		return nil, err
	}
	return rewriteFields(n, func(f protowire.Number, raw, val []byte) ([]byte, error) {
		if f != nodeAttribute || val == nil {
			return raw, nil
		}
		a, err := rewriteFields(val, func(f protowire.Number, raw, val []byte) ([]byte, error) {
			switch {
			case f == attrTensor && val != nil:
				t, err := float32Tensor(val)
				if err != nil {
					return nil, err
				}
				return appendBytesField(nil, f, t), nil
			case f == attrInt && node.op == "Cast":
				return float32Enum(f, attrInt, raw), nil
			}
			return raw, nil
		})
		if err != nil {
			return nil, err
		}
		return appendBytesField(nil, f, a), nil
	})
}

// float32Enum rewrites the varint field want holding FLOAT16 to FLOAT.
func float32Enum(f, want protowire.Number, raw []byte) []byte {
	if f != want {
		return raw
	}
	v, n := protowire.ConsumeVarint(raw[protowire.SizeTag(f):])
	if n < 0 || v != onnxFloat16 {
		return raw
	}
	return protowire.AppendVarint(protowire.AppendTag(nil, f, protowire.VarintType), onnxFloat)
}

// float32Tensor converts an fp16 TensorProto (raw_data or int32_data) to
// fp32 raw_data; other tensors are returned as they are.
func float32Tensor(t []byte) ([]byte, error) {
	half := false
	if err := eachField(t, func(f protowire.Number, raw, _ []byte) error {
		if f == tensorDataType {
			v, n := protowire.ConsumeVarint(raw[protowire.SizeTag(f):])
			half = n > 0 && v == onnxFloat16
		}
		return nil
	}); err != nil || !half {
		return t, err
	}
	var bits []uint16
	var out []byte
	err := eachField(t, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case tensorDataType:
			out = float32EnumAppend(out, f)
		case tensorRawData:
			if len(val)%2 != 0 {
				return fmt.Errorf("infer: fp16 tensor of %d bytes", len(val))
			}
			bits = slices.Grow(bits, len(val)/2)
			for i := 0; i < len(val); i += 2 {
				bits = append(bits, binary.LittleEndian.Uint16(val[i:]))
			}
		case tensorInt32Data:
			if val == nil { // unpacked: one varint a field
				v, n := protowire.ConsumeVarint(raw[protowire.SizeTag(f):])
				if n < 0 {
					return errors.New("infer: bad fp16 tensor data")
				}
				bits = append(bits, uint16(v))
				return nil
			}
			for len(val) > 0 {
				v, n := protowire.ConsumeVarint(val)
				if n < 0 {
					return errors.New("infer: bad fp16 tensor data")
				}
				bits = append(bits, uint16(v))
				val = val[n:]
			}
		default:
			out = append(out, raw...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	data := make([]byte, 4*len(bits))
	for i, h := range bits {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(halfToFloat(h)))
	}
	return appendBytesField(out, tensorRawData, data), nil
}

func float32EnumAppend(b []byte, f protowire.Number) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, f, protowire.VarintType), onnxFloat)
}

// halfToFloat is the exact value of an IEEE 754 binary16 bit pattern.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, nan
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man x 2^-24
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// rewriteFields rebuilds a protobuf message field by field: fn returns
// each field's new bytes (tag included; raw to keep it, nil to drop it).
func rewriteFields(b []byte, fn func(f protowire.Number, raw, val []byte) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(b))
	err := eachField(b, func(f protowire.Number, raw, val []byte) error {
		r, err := fn(f, raw, val)
		out = append(out, r...)
		return err
	})
	return out, err
}
