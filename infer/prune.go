package infer

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// PruneGraph keeps only the graph outputs named in keep and the nodes they
// need: every other output is removed with the nodes that only it needed.
// ONNX Runtime runs every node of a graph, also those of outputs nobody
// fetches: IS-Net's export has six side outputs (its deep supervision's
// maps d1..d6, each upsampled to the full size through a sigmoid) of which
// a segmentation uses the first. It fails when a name of keep is not an
// output of the graph.
func PruneGraph(model []byte, keep ...string) ([]byte, error) {
	seen := map[string]bool{}
	out, err := rewriteNested(model, []protowire.Number{modelGraph}, func(g []byte) ([]byte, error) {
		return pruneGraph(g, keep, seen)
	})
	if err != nil {
		return nil, err
	}
	for _, k := range keep {
		if !seen[k] {
			return nil, fmt.Errorf("infer: the graph has no output %q", k)
		}
	}
	return out, nil
}

func pruneGraph(g []byte, keep []string, seen map[string]bool) ([]byte, error) {
	want := map[string]bool{}
	for _, k := range keep {
		want[k] = true
	}
	var nodes []onnxNode
	if err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case graphNode:
			n, err := parseNode(val)
			nodes = append(nodes, n)
			return err
		case graphOutput:
			name, err := valueInfoName(val)
			if err == nil && want[name] {
				seen[name] = true
			}
			return err
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Walk back from the kept outputs: a node is needed when one of its
	// outputs is. Repeated until nothing changes: exported graphs are not
	// always in topological order (this one's fp16 casts come last).
	need := map[string]bool{}
	for k := range want {
		need[k] = true
	}
	live := make([]bool, len(nodes))
	for changed := true; changed; {
		changed = false
		for i := len(nodes) - 1; i >= 0; i-- {
			if live[i] {
				continue
			}
			for _, o := range nodes[i].out {
				live[i] = live[i] || need[o]
			}
			if live[i] {
				changed = true
				for _, in := range nodes[i].in {
					if in != "" {
						need[in] = true
					}
				}
			}
		}
	}
	var out []byte
	i := 0
	err := eachField(g, func(f protowire.Number, raw, val []byte) error {
		switch f {
		case graphNode:
			if live[i] {
				out = append(out, raw...)
			}
			i++
		case graphOutput:
			if name, _ := valueInfoName(val); want[name] {
				out = append(out, raw...)
			}
		case graphValueInfo:
			if name, _ := valueInfoName(val); need[name] {
				out = append(out, raw...)
			}
		default:
			out = append(out, raw...)
		}
		return nil
	})
	return out, err
}

func valueInfoName(v []byte) (string, error) {
	var name string
	err := eachField(v, func(f protowire.Number, raw, val []byte) error {
		if f == valueName {
			name = string(val)
		}
		return nil
	})
	return name, err
}
