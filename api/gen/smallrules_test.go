package gen

import (
	"bytes"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"image"
	"image/jpeg"
	"testing"
)

// TestOneSniffingRule: content is judged against the type its name or
// data: header declares, for uploads and data: URIs alike.
func TestOneSniffingRule(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, img, nil); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"jpeg upload named .png": e.Upload(key, "still.png", jb.Bytes()),
		"jpeg as data:image/png": apitest.DataURI("image/png", jb.Bytes()),
	} {
		if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)); r.Status != 400 || r.Code() != api.CodeInvalidFileFormat {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	for name, src := range map[string]string{
		"jpeg upload named .jpg":  e.Upload(key, "still.jpg", jb.Bytes()),
		"jpeg as data:image/jpeg": apitest.DataURI("image/jpeg", jb.Bytes()),
	} {
		if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)); r.Status != 201 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}
