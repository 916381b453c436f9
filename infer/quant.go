package infer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrQuant is a graph that QuantizeGraph cannot quantize.
var ErrQuant = errors.New("infer: cannot quantize the graph")

// Fields and values that the quantization writes (onnx/onnx.proto3).
const (
	tensorDims     = 1 // TensorProto.dims
	tensorName     = 8 // TensorProto.name
	tensorFloat    = 4 // TensorProto.float_data
	onnxUint8      = 2
	onnxInt8       = 3
	onnxInt32      = 6
	quantSuffixQ   = "/vfx_q"
	quantSuffixF   = "/vfx_f"
	quantSuffixDQ  = "/vfx_dq"
	quantInputName = "vfx_input"
)

// Ranges are the calibrated smallest and largest values of a graph's
// activations, by tensor name (CalibrationTensors).
type Ranges map[string][2]float32

// graphParts is a parsed graph: its fields in order, with the nodes and
// initializers decoded enough to rewrite them.
type graphParts struct {
	fields  [][]byte // raw fields other than nodes and initializers, in order
	nodes   []qnode
	inits   map[string]qinit
	initOrd []string
	outputs map[string]bool
	inputs  []string
}

type qnode struct {
	raw []byte
	onnxNode
}

type qinit struct {
	raw  []byte
	dims []int64
	typ  int
	data []float32 // float tensors only
}

func parseGraphParts(g []byte) (*graphParts, error) {
	p := &graphParts{inits: map[string]qinit{}, outputs: map[string]bool{}}
	err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case graphNode:
			n, err := parseNode(val)
			if err != nil {
				return err
			}
			p.nodes = append(p.nodes, qnode{raw: val, onnxNode: n})
		case graphInitializer:
			name, in, err := parseInit(val)
			if err != nil {
				return err
			}
			p.inits[name] = in
			p.initOrd = append(p.initOrd, name)
		case graphOutput, graphInput:
			name, err := valueInfoName(val)
			if err != nil {
				return err
			}
			if f == graphOutput {
				p.outputs[name] = true
			} else {
				p.inputs = append(p.inputs, name)
			}
			p.fields = append(p.fields, raw)
		default:
			p.fields = append(p.fields, raw)
		}
		return nil
	})
	return p, err
}

func parseInit(t []byte) (string, qinit, error) {
	var name string
	in := qinit{raw: t}
	var floats []float32
	err := eachField(t, func(f protowire.Number, raw, val []byte) error {
		body := raw[protowire.SizeTag(f):]
		switch f {
		case tensorName:
			name = string(val)
		case tensorDataType:
			v, _ := protowire.ConsumeVarint(body)
			in.typ = int(v)
		case tensorDims:
			if val != nil { // packed
				for len(val) > 0 {
					v, n := protowire.ConsumeVarint(val)
					if n < 0 {
						return errors.New("infer: bad tensor dims")
					}
					in.dims = append(in.dims, int64(v))
					val = val[n:]
				}
				return nil
			}
			v, _ := protowire.ConsumeVarint(body)
			in.dims = append(in.dims, int64(v))
		case tensorRawData:
			if len(val)%4 == 0 {
				floats = make([]float32, len(val)/4)
				for i := range floats {
					floats[i] = math.Float32frombits(binary.LittleEndian.Uint32(val[4*i:]))
				}
			}
		case tensorFloat:
			if val != nil {
				for i := 0; i+4 <= len(val); i += 4 {
					floats = append(floats, math.Float32frombits(binary.LittleEndian.Uint32(val[i:])))
				}
			} else {
				floats = append(floats, math.Float32frombits(binary.LittleEndian.Uint32(body)))
			}
		}
		return nil
	})
	if in.typ == onnxFloat {
		in.data = floats
	}
	return name, in, err
}

// CalibrationTensors names the tensors whose ranges QuantizeGraph needs,
// sorted: the outputs of the graph's Relu and Add nodes and of each Conv
// that another Conv reads directly.
func CalibrationTensors(model []byte) ([]string, error) {
	var names []string
	_, err := rewriteNested(model, []protowire.Number{modelGraph}, func(g []byte) ([]byte, error) {
		p, err := parseGraphParts(g)
		if err != nil {
			return nil, err
		}
		nodes, _ := p.withoutCasts()
		for name := range calibrated(nodes) {
			names = append(names, name)
		}
		return g, nil
	})
	sort.Strings(names)
	return names, err
}

// withoutCasts is the graph's nodes with every Cast to float that makes
// no graph output removed (Float32Graph leaves the fp16 model's casts as
// casts from float to float) and its output replaced by its input where
// it is read; and the graph's input.
func (p *graphParts) withoutCasts() ([]qnode, string) {
	alias := map[string]string{}
	var nodes []qnode
	for _, n := range p.nodes {
		if n.op == "Cast" && len(n.in) == 1 && len(n.out) == 1 && !p.outputs[n.out[0]] && castToFloat(n.raw) {
			alias[n.out[0]] = n.in[0]
			continue
		}
		nodes = append(nodes, n)
	}
	resolve := func(s string) string {
		for k := 0; k < 64; k++ {
			a, ok := alias[s]
			if !ok {
				return s
			}
			s = a
		}
		return s
	}
	for i := range nodes {
		in := make([]string, len(nodes[i].in))
		for k, s := range nodes[i].in {
			in[k] = resolve(s)
		}
		nodes[i].in = in
	}
	input := ""
	if len(p.inputs) > 0 {
		input = p.inputs[0]
	}
	return nodes, input
}

// calibrated is the set of tensors that need a calibrated range: Relu's
// and Add's outputs, and Conv outputs that a Conv reads.
func calibrated(nodes []qnode) map[string]bool {
	convOut := map[string]bool{}
	for _, n := range nodes {
		if n.op == "Conv" && len(n.out) == 1 {
			convOut[n.out[0]] = true
		}
	}
	set := map[string]bool{}
	for _, n := range nodes {
		switch {
		case (n.op == "Relu" || n.op == "Add") && len(n.out) == 1:
			set[n.out[0]] = true
		case n.op == "Conv" && len(n.in) > 0 && convOut[n.in[0]]:
			set[n.in[0]] = true
		}
	}
	return set
}

// AddOutputs makes each named intermediate float tensor an output of the
// graph (for calibration: the run returns them).
func AddOutputs(model []byte, names []string) ([]byte, error) {
	return rewriteNested(model, []protowire.Number{modelGraph}, func(g []byte) ([]byte, error) {
		out := append([]byte(nil), g...)
		for _, n := range names {
			out = appendBytesField(out, graphOutput, floatValueInfo(n))
		}
		return out, nil
	})
}

// floatValueInfo is a graph output's ValueInfo: its name and a float
// tensor type of unstated shape.
func floatValueInfo(name string) []byte {
	var tt []byte
	tt = protowire.AppendTag(tt, typeElemType, protowire.VarintType)
	tt = protowire.AppendVarint(tt, onnxFloat)
	var typ []byte
	typ = appendBytesField(typ, typeTensor, tt)
	var vi []byte
	vi = protowire.AppendTag(vi, valueName, protowire.BytesType)
	vi = protowire.AppendString(vi, name)
	return appendBytesField(vi, valueType, typ)
}

// qparam is one activation's quantization: uint8 codes q with value
// scale·(q − zero).
type qparam struct {
	scale float32
	zero  uint8
}

// QuantizeGraph rewrites an fp32 graph built of Conv, Relu, MaxPool,
// Resize, Concat and Add (IS-Net's, after Float32Graph) into ONNX's
// quantize-dequantize form, which ONNX Runtime's CPU provider turns into
// 8-bit kernels (QLinearConv with uint8 activations and int8 weights):
//   - each Conv's weights become int8 per output channel (symmetric, the
//     channel's largest magnitude at 127) and its bias int32 at the
//     product of the input's and the weights' scales;
//   - each Relu becomes a uint8 quantization with zero point 0 (which is
//     the Relu: negatives clamp to 0) at the scale ranges gives its output
//     (its largest value at 255), and each Add's output is quantized the
//     same way;
//   - MaxPool's and Resize's outputs keep their input's quantization, and
//     a Concat's takes the largest scale of its inputs;
//   - the graph's input (normalised pixels in [-0.5, 0.5)) is quantized at
//     1/256 with zero point 128, so that 8-bit pixel codes stay exact;
//   - Casts from float to float (Float32Graph leaves the fp16 model's) are
//     removed unless they make a graph output.
//
// Convs whose output is not a Relu's input (IS-Net's side outputs) keep
// float outputs. It fails with ErrQuant when ranges lacks a tensor or an
// op of another kind carries an activation that a Conv reads.
func QuantizeGraph(model []byte, ranges Ranges) ([]byte, error) {
	return rewriteNested(model, []protowire.Number{modelGraph}, func(g []byte) ([]byte, error) {
		return quantizeGraph(g, ranges)
	})
}

func quantizeGraph(g []byte, ranges Ranges) ([]byte, error) {
	p, err := parseGraphParts(g)
	if err != nil {
		return nil, err
	}
	if len(p.inputs) != 1 {
		return nil, fmt.Errorf("%w: %d graph inputs", ErrQuant, len(p.inputs))
	}
	nodes, input := p.withoutCasts()
	// The activations' quantization.
	qp := map[string]qparam{}
	qp[input] = qparam{scale: 1.0 / 256, zero: 128}
	for name := range calibrated(nodes) {
		r, ok := ranges[name]
		lo, hi := float64(min(r[0], 0)), float64(r[1])
		if !ok || !(hi > lo) || math.IsInf(hi-lo, 0) {
			return nil, fmt.Errorf("%w: no range for %q", ErrQuant, name)
		}
		sc := (hi - lo) / 255
		qp[name] = qparam{scale: float32(sc), zero: uint8(math.Round(-lo / sc))}
	}
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if len(n.out) != 1 || len(n.in) == 0 {
				continue
			}
			if _, done := qp[n.out[0]]; done {
				continue
			}
			switch n.op {
			case "MaxPool", "Resize":
				if q, ok := qp[n.in[0]]; ok && q.zero == 0 {
					qp[n.out[0]] = q
					changed = true
				}
			case "Concat":
				s, all := float32(0), true
				for _, in := range n.in {
					q, ok := qp[in]
					all = all && ok && q.zero == 0
					s = max(s, q.scale)
				}
				if all {
					qp[n.out[0]] = qparam{scale: s}
					changed = true
				}
			}
		}
	}
	// Rewrite.
	var newNodes [][]byte
	var newInits [][]byte
	dropInit := map[string]bool{}
	qdq := func(from, to string, q qparam) {
		s, z := to+"/vfx_s", to+"/vfx_z"
		newInits = append(newInits, scalarFloat(s, q.scale), scalarUint8(z, q.zero))
		newNodes = append(newNodes,
			makeNode("QuantizeLinear", []string{from, s, z}, []string{to + quantSuffixQ}, 0, false),
			makeNode("DequantizeLinear", []string{to + quantSuffixQ, s, z}, []string{to}, 0, false))
	}
	qdq(input, quantInputName, qp[input])
	qp[quantInputName] = qp[input]
	for _, n := range nodes {
		for k, in := range n.in {
			if in == input {
				n.in[k] = quantInputName
			}
		}
		switch {
		case n.op == "Relu":
			// The Relu is the uint8 quantization itself.
			qdq(n.in[0], n.out[0], qp[n.out[0]])
			continue
		case n.op == "Add" || n.op == "MaxPool" || n.op == "Resize" || n.op == "Concat":
			if q, ok := qp[n.out[0]]; ok {
				o := n.out[0]
				n.out = []string{o + quantSuffixF}
				qdq(o+quantSuffixF, o, q)
			}
		case n.op == "Conv":
			if len(n.in) < 2 {
				return nil, fmt.Errorf("%w: a Conv with %d inputs", ErrQuant, len(n.in))
			}
			xq, ok := qp[n.in[0]]
			if !ok {
				return nil, fmt.Errorf("%w: Conv input %q is not quantized", ErrQuant, n.in[0])
			}
			w, ok := p.inits[n.in[1]]
			if !ok || w.data == nil || len(w.dims) != 4 {
				return nil, fmt.Errorf("%w: Conv weights %q are not a float initializer", ErrQuant, n.in[1])
			}
			c := int(w.dims[0])
			per := len(w.data) / c
			ws := make([]float32, c)
			wq := make([]byte, len(w.data))
			for o := 0; o < c; o++ {
				m := float32(0)
				for _, v := range w.data[o*per : (o+1)*per] {
					m = max(m, float32(math.Abs(float64(v))))
				}
				if m == 0 {
					m = 1
				}
				ws[o] = m / 127
				for k, v := range w.data[o*per : (o+1)*per] {
					wq[o*per+k] = byte(int8(max(-127, min(127, math.Round(float64(v/ws[o]))))))
				}
			}
			wn := n.in[1]
			newInits = append(newInits,
				rawTensor(wn+quantSuffixQ, onnxInt8, w.dims, wq),
				floatTensor(wn+"/vfx_s", []int64{int64(c)}, ws),
				rawTensor(wn+"/vfx_z", onnxInt8, []int64{int64(c)}, make([]byte, c)))
			newNodes = append(newNodes, makeNode("DequantizeLinear", []string{wn + quantSuffixQ, wn + "/vfx_s", wn + "/vfx_z"}, []string{wn + quantSuffixDQ}, 0, true))
			dropInit[wn] = true
			n.in[1] = wn + quantSuffixDQ
			if len(n.in) > 2 && n.in[2] != "" {
				b, ok := p.inits[n.in[2]]
				if !ok || b.data == nil || len(b.data) != c {
					return nil, fmt.Errorf("%w: Conv bias %q is not a float initializer of %d values", ErrQuant, n.in[2], c)
				}
				bs := make([]float32, c)
				bq := make([]byte, 4*c)
				for o := 0; o < c; o++ {
					bs[o] = xq.scale * ws[o]
					v := math.Round(float64(b.data[o] / bs[o]))
					binary.LittleEndian.PutUint32(bq[4*o:], uint32(int32(max(math.MinInt32, min(math.MaxInt32, v)))))
				}
				bn := n.in[2]
				newInits = append(newInits,
					rawTensor(bn+quantSuffixQ, onnxInt32, []int64{int64(c)}, bq),
					floatTensor(bn+"/vfx_s", []int64{int64(c)}, bs),
					rawTensor(bn+"/vfx_z", onnxInt32, []int64{int64(c)}, make([]byte, 4*c)))
				newNodes = append(newNodes, makeNode("DequantizeLinear", []string{bn + quantSuffixQ, bn + "/vfx_s", bn + "/vfx_z"}, []string{bn + quantSuffixDQ}, 0, true))
				dropInit[bn] = true
				n.in[2] = bn + quantSuffixDQ
			}
			if q, ok := qp[n.out[0]]; ok {
				// A Conv that another Conv reads (no Relu between).
				o := n.out[0]
				n.out = []string{o + quantSuffixF}
				qdq(o+quantSuffixF, o, q)
			}
		}
		newNodes = append(newNodes, rewriteNodeIO(n.raw, n.in, n.out))
	}
	// Emit: the other fields in order, the kept initializers, the nodes.
	var out []byte
	for _, f := range p.fields {
		out = append(out, f...)
	}
	for _, name := range p.initOrd {
		if !dropInit[name] {
			out = appendBytesField(out, graphInitializer, p.inits[name].raw)
		}
	}
	for _, t := range newInits {
		out = appendBytesField(out, graphInitializer, t)
	}
	for _, n := range newNodes {
		out = appendBytesField(out, graphNode, n)
	}
	return out, nil
}

// castToFloat reports whether a Cast node's "to" is FLOAT.
func castToFloat(node []byte) bool {
	to := int64(-1)
	_ = eachField(node, func(f protowire.Number, raw, val []byte) error {
		if f != nodeAttribute {
			return nil
		}
		var name string
		var i int64
		_ = eachField(val, func(f protowire.Number, raw, v []byte) error {
			switch f {
			case attrName:
				name = string(v)
			case attrInt:
				x, _ := protowire.ConsumeVarint(raw[protowire.SizeTag(f):])
				i = int64(x)
			}
			return nil
		})
		if name == "to" {
			to = i
		}
		return nil
	})
	return to == onnxFloat
}

// rewriteNodeIO is a node with its inputs and outputs replaced.
func rewriteNodeIO(node []byte, in, out []string) []byte {
	b := appendIO(nil, in, out)
	_ = eachField(node, func(f protowire.Number, raw, val []byte) error {
		if f != nodeInput && f != nodeOutput {
			b = append(b, raw...)
		}
		return nil
	})
	return b
}

// appendIO appends a node's input and output fields.
func appendIO(b []byte, in, out []string) []byte {
	for _, s := range in {
		b = protowire.AppendTag(b, nodeInput, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	for _, s := range out {
		b = protowire.AppendTag(b, nodeOutput, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

// makeNode is a node of op with inputs and outputs; axis, when set, is
// an "axis" attribute (DequantizeLinear's per-channel axis).
func makeNode(op string, in, out []string, axis int64, withAxis bool) []byte {
	b := appendIO(nil, in, out)
	b = protowire.AppendTag(b, nodeName, protowire.BytesType)
	b = protowire.AppendString(b, out[0]+"/"+op)
	b = protowire.AppendTag(b, nodeOpType, protowire.BytesType)
	b = protowire.AppendString(b, op)
	if withAxis {
		var a []byte
		a = protowire.AppendTag(a, attrName, protowire.BytesType)
		a = protowire.AppendString(a, "axis")
		a = protowire.AppendTag(a, attrInt, protowire.VarintType)
		a = protowire.AppendVarint(a, uint64(axis))
		a = protowire.AppendTag(a, attrType, protowire.VarintType)
		a = protowire.AppendVarint(a, attrTypeInt)
		b = appendBytesField(b, nodeAttribute, a)
	}
	return b
}

func rawTensor(name string, typ int, dims []int64, data []byte) []byte {
	var t []byte
	for _, d := range dims {
		t = protowire.AppendTag(t, tensorDims, protowire.VarintType)
		t = protowire.AppendVarint(t, uint64(d))
	}
	t = protowire.AppendTag(t, tensorDataType, protowire.VarintType)
	t = protowire.AppendVarint(t, uint64(typ))
	t = protowire.AppendTag(t, tensorName, protowire.BytesType)
	t = protowire.AppendString(t, name)
	return appendBytesField(t, tensorRawData, data)
}

func floatTensor(name string, dims []int64, v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return rawTensor(name, onnxFloat, dims, b)
}

func scalarFloat(name string, v float32) []byte { return floatTensor(name, nil, []float32{v}) }

func scalarUint8(name string, v uint8) []byte { return rawTensor(name, onnxUint8, nil, []byte{v}) }
