package bench

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

func TestMatteSuiteSelect(t *testing.T) {
	dev := kernels.NewCPU(0)
	defer dev.Close()
	var sj, sf float64
	cases := MatteSuite(320, 180, 30)
	for _, c := range cases {
		r, err := RunSelect(context.Background(), dev, c, 0, matte.DefaultSelectOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		sj += r.Scores.J
		sf += r.Scores.F
	}
	sj /= float64(len(cases))
	sf /= float64(len(cases))
	t.Logf("mean J %.3f F %.3f", sj, sf)
	if sj < 0.90 || sf < 0.85 {
		t.Errorf("select: mean J %.3f (want >= 0.90), F %.3f (want >= 0.85)", sj, sf)
	}
}
