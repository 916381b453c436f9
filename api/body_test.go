package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"
)

func TestCanonicalMatchesMarshal(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"b":1,"a":[1,2.50,{"z":null,"y":true}],"c":"x<y"}`,
		`{ "source" : "data:image/png;base64,AAAA" , "n": -1e3, "u":"\u00e9\u2028\/", "e":[] , "o":{}}`,
		`{"k":"\ud83d\ude00", "s":"tab\tq\"b\\"}`,
	} {
		var v any
		dec := json.NewDecoder(bytes.NewReader([]byte(in)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		h1, h2 := sha256.New(), sha256.New()
		h1.Write(want)
		if err := WriteCanonical(h2, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(h1.Sum(nil), h2.Sum(nil)) {
			t.Errorf("canonical form of %s differs from %s", in, want)
		}
	}
}

func TestParseObjectRefusesDuplicateKeys(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"b":[{"c":1,"c":1}]}}`, `{"x":{"b":1,"b":2}}`,
	} {
		_, err := ParseObject([]byte(in))
		var de *DetailError
		if !errors.As(err, &de) || de.Detail[0].Type != "json_invalid" {
			t.Errorf("%s: got %v, want a json_invalid 422", in, err)
		}
	}
	ms, err := ParseObject([]byte(` {"a":"x","b":{"a":1},"c":[{"a":1},{"a":2}]} `))
	if err != nil || len(ms) != 3 || string(ms[1].Raw) != `{"a":1}` || string(ms[2].Raw) != `[{"a":1},{"a":2}]` {
		t.Fatalf("parse: %v %v", ms, err)
	}
}
