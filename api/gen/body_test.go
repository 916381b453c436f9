package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// The streamed hashes must equal the json.Marshal forms they replace, so
// that idempotency keys recorded before keep matching.
func TestGenHashMatchesMarshal(t *testing.T) {
	s := func(v string) *string { return &v }
	i := func(v int64) *int64 { return &v }
	for _, g := range []genRequest{
		{},
		{GenerationType: s("image"), SourceURI: s("data:image/png;base64,iVBORw0KGgo="), AlphaMode: s("auto"), Prompt: s("a <b> & \"c\" \u2028 é \x01"),
			Seed: i(42), MaxResolution: i(1080), IdempotencyKey: s("k"), CallbackURL: s("https://x/y?a=1&b=2")},
		{ReferenceImageURI: s("vfx://uploads/upload_abcdefgh/a.png"), AlphaURI: s("\xff\xfe"), AlphaKeyframeIndex: i(-3)},
	} {
		c := g
		c.IdempotencyKey = nil
		b, _ := json.Marshal(c)
		sum := sha256.Sum256(b)
		if want := hex.EncodeToString(sum[:]); g.hash() != want {
			t.Errorf("hash of %s differs from the Marshal form", b)
		}
	}
}
