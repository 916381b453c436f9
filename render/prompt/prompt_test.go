package prompt

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/render/colour"
)

func TestParsePromptLights(t *testing.T) {
	l := Parse("warm key light from the left, cool blue rim light from behind")
	if len(l.Lights) != 2 {
		t.Fatalf("got %d lights, want 2: %+v", len(l.Lights), l.Lights)
	}
	key, rim := l.Lights[0], l.Lights[1]
	if key.Role != RoleKey || key.Dir[0] >= -0.3 {
		t.Errorf("key = %+v, want a key light with negative x", key)
	}
	if !(key.Color[0] > key.Color[2]) {
		t.Errorf("key colour %v is not warm (R > B)", key.Color)
	}
	if rim.Role != RoleRim || rim.Dir[2] >= -0.2 {
		t.Errorf("rim = %+v, want a rim light with negative z", rim)
	}
	if !(rim.Color[2] > rim.Color[0]) {
		t.Errorf("rim colour %v is not blue (B > R)", rim.Color)
	}
	if rim.Dir[0] <= 0 {
		t.Errorf("rim x = %v, want the side opposite the key", rim.Dir[0])
	}
	if !l.Rim {
		t.Error("Rim = false, want true")
	}
	for _, lt := range l.Lights {
		n := math.Sqrt(float64(lt.Dir[0]*lt.Dir[0] + lt.Dir[1]*lt.Dir[1] + lt.Dir[2]*lt.Dir[2]))
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("direction %v is not unit (%v)", lt.Dir, n)
		}
	}
}

func TestParsePromptDirections(t *testing.T) {
	tests := []struct {
		prompt string
		check  func(d [3]float32) bool
		want   string
	}{
		{"light from the right", func(d [3]float32) bool { return d[0] > 0.5 && d[2] > 0 }, "x > 0.5, z > 0"},
		{"light from the left", func(d [3]float32) bool { return d[0] < -0.5 && d[2] > 0 }, "x < -0.5, z > 0"},
		{"overhead light", func(d [3]float32) bool { return d[1] > 0.8 }, "y > 0.8"},
		{"lit from below", func(d [3]float32) bool { return d[1] < -0.5 }, "y < -0.5"},
		{"backlit", func(d [3]float32) bool { return d[2] < -0.5 }, "z < -0.5"},
		{"frontal light", func(d [3]float32) bool { return d[2] > 0.9 }, "z > 0.9"},
		{"side light from the right", func(d [3]float32) bool { return d[0] > 0.9 && math.Abs(float64(d[2])) < 0.2 }, "x > 0.9, |z| < 0.2"},
		{"key light at 45 degrees from the left", func(d [3]float32) bool {
			return d[0] < -0.6 && d[0] > -0.8 && d[2] > 0.6
		}, "45 degrees left"},
		{"light 90° right", func(d [3]float32) bool { return d[0] > 0.95 }, "x > 0.95"},
		{"top left light", func(d [3]float32) bool { return d[0] < -0.4 && d[1] > 0.4 }, "x < -0.4, y > 0.4"},
		{"key light, from the top right", func(d [3]float32) bool { return d[0] > 0.4 && d[1] > 0.4 }, "x > 0.4, y > 0.4"},
		{"lit by a campfire at night", func(d [3]float32) bool { return d[1] < -0.3 && d[2] > 0 }, "from below, in front"},
		{"harsh spotlight", func(d [3]float32) bool { return d[1] > 0.7 }, "from above"},
		{"Rembrandt lighting", func(d [3]float32) bool { return d[0] < -0.4 && d[1] > 0.3 && d[2] > 0.3 }, "45 degrees side and above"},
		{"butterfly lighting", func(d [3]float32) bool { return math.Abs(float64(d[0])) < 0.1 && d[1] > 0.4 }, "front, above"},
		{"warm light, beach at sunset", func(d [3]float32) bool { return math.Abs(float64(d[0])) > 0.7 && d[1] < 0.4 }, "low sun from the side"},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			l := Parse(tc.prompt)
			if len(l.Lights) == 0 {
				t.Fatalf("no light parsed")
			}
			if d := l.Lights[0].Dir; !tc.check(d) {
				t.Fatalf("direction %v, want %s", d, tc.want)
			}
		})
	}
}

func TestParsePromptTemperature(t *testing.T) {
	tests := []struct {
		prompt string
		want   float32
	}{
		{"3200K tungsten", 3200},
		{"tungsten 5600 K key", 5600},
		{"4300 kelvin light", 4300},
		{"candle light", 1900},
		{"daylight", 5600},
		{"warm", 3400},
		{"cool light", 7600},
		{"a person standing", 0},
		{"99999K", 0},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			if got := Parse(tc.prompt).Temperature; got != tc.want {
				t.Fatalf("Temperature = %v, want %v", got, tc.want)
			}
		})
	}
	warm, cool := colour.KelvinToRGB(2500), colour.KelvinToRGB(9000)
	if !(warm[0] > warm[2]) || !(cool[2] > cool[0]) {
		t.Fatalf("colour.KelvinToRGB: 2500K = %v, 9000K = %v", warm, cool)
	}
	for _, k := range []float32{500, 1000, 3200, 6500, 20000, 1e6} {
		c := colour.KelvinToRGB(k)
		if y := colour.Luminance(c); math.Abs(float64(y)-1) > 1e-4 {
			t.Errorf("colour.KelvinToRGB(%v) luminance %v, want 1", k, y)
		}
	}
	d65 := colour.KelvinToRGB(6500)
	if math.Abs(float64(d65[0]-d65[2])) > 0.06 {
		t.Errorf("6500K = %v, want near neutral", d65)
	}
}

func TestParsePromptHardness(t *testing.T) {
	soft := Parse("soft key light from the left")
	hard := Parse("hard key light from the left")
	harsh := Parse("harsh spotlight")
	if len(soft.Lights) == 0 || len(hard.Lights) == 0 || len(harsh.Lights) == 0 {
		t.Fatal("missing lights")
	}
	if !(soft.Lights[0].Hardness < 0.3) || !(hard.Lights[0].Hardness > 0.7) || !(harsh.Lights[0].Hardness > 0.7) {
		t.Fatalf("hardness soft %v, hard %v, harsh %v", soft.Lights[0].Hardness, hard.Lights[0].Hardness, harsh.Lights[0].Hardness)
	}
	// A global hardness word applies to lights that have none.
	g := Parse("softbox, key light from the right")
	if g.Lights[0].Hardness > 0.3 {
		t.Fatalf("global soft: hardness %v", g.Lights[0].Hardness)
	}
}

func TestParsePromptScene(t *testing.T) {
	tests := []struct {
		prompt string
		scene  Scene
		time   TimeOfDay
	}{
		{"night", SceneExterior, TimeNight},
		{"city street at night", SceneCity, TimeNight},
		{"golden hour on the beach", SceneBeach, TimeGolden},
		{"sunset in the desert", SceneDesert, TimeSunset},
		{"forest at dawn", SceneForest, TimeSunrise},
		{"studio portrait", SceneStudio, TimeUnspecified},
		{"cyberpunk neon alley", SceneNeon, TimeNight},
		{"office interior", SceneInterior, TimeUnspecified},
		{"snowy mountains, overcast", SceneSnow, TimeOvercast},
		{"blue hour", SceneExterior, TimeDusk},
		{"", SceneStudio, TimeUnspecified},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			l := Parse(tc.prompt)
			if l.Scene != tc.scene || l.Time != tc.time {
				t.Fatalf("scene %v time %v, want %v %v", l.Scene, l.Time, tc.scene, tc.time)
			}
			if tc.prompt != "" && len(l.Lights) == 0 {
				t.Fatalf("a scene prompt has no default light")
			}
		})
	}
}

func TestParsePromptIntensityContrastPalette(t *testing.T) {
	if l := Parse("bright high-key portrait"); !(l.Intensity > 1.1) || !(l.Contrast < 1) {
		t.Errorf("high key: intensity %v contrast %v", l.Intensity, l.Contrast)
	}
	if l := Parse("dark, moody, low-key"); !(l.Intensity < 0.8) || !(l.Contrast > 1.2) {
		t.Errorf("low key: intensity %v contrast %v", l.Intensity, l.Contrast)
	}
	if l := Parse("very very very bright bright bright bright brighter"); l.Intensity > 1.6 {
		t.Errorf("intensity %v above its range", l.Intensity)
	}
	l := Parse("teal and orange colours, red red")
	if len(l.Palette) != 3 {
		t.Fatalf("palette %v, want teal, orange, red", l.Palette)
	}
	if !(l.Palette[0][2] > l.Palette[0][0]) || !(l.Palette[1][0] > l.Palette[1][2]) {
		t.Errorf("palette colours %v", l.Palette)
	}
	if len(l.Lights) != 0 {
		t.Errorf("colours alone made lights: %+v", l.Lights)
	}
}

func TestParsePromptEmpty(t *testing.T) {
	for _, p := range []string{"", "   ", "a person", "zzz qqq"} {
		l := Parse(p)
		if len(l.Lights) != 0 || l.Intensity != 1 || l.Contrast != 1 || l.Scene != SceneStudio || l.Temperature != 0 {
			t.Errorf("%q: %+v, want neutral", p, l)
		}
		if y := colour.Luminance(l.Ambient); math.Abs(float64(y)-1) > 1e-3 {
			t.Errorf("%q: ambient %v, want luminance 1", p, l.Ambient)
		}
	}
}

func TestParsePromptDeterministic(t *testing.T) {
	p := "dramatic warm 3000K key from the top left and a magenta rim from behind, neon city at night"
	a, b := Parse(p), Parse(p)
	if len(a.Lights) != len(b.Lights) || a.Ambient != b.Ambient || a.Temperature != b.Temperature {
		t.Fatal("Parse is not deterministic")
	}
	for i := range a.Lights {
		if a.Lights[i] != b.Lights[i] {
			t.Fatal("Parse is not deterministic")
		}
	}
}

func checkLighting(t *testing.T, prompt string, l Lighting) {
	t.Helper()
	fin := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	for _, lt := range l.Lights {
		for k := 0; k < 3; k++ {
			if !fin(lt.Dir[k]) || !fin(lt.Color[k]) || lt.Color[k] < 0 {
				t.Fatalf("%q: bad light %+v", prompt, lt)
			}
		}
		if !(lt.Hardness >= 0 && lt.Hardness <= 1) {
			t.Fatalf("%q: hardness %v", prompt, lt.Hardness)
		}
	}
	for k := 0; k < 3; k++ {
		if !fin(l.Ambient[k]) || l.Ambient[k] < 0 {
			t.Fatalf("%q: ambient %v", prompt, l.Ambient)
		}
	}
	if !(l.Intensity >= 0.5 && l.Intensity <= 1.6) || !(l.Contrast >= 0.6 && l.Contrast <= 1.8) || !fin(l.Temperature) {
		t.Fatalf("%q: intensity %v contrast %v temperature %v", prompt, l.Intensity, l.Contrast, l.Temperature)
	}
	if len(l.Lights) > 8 {
		t.Fatalf("%q: %d lights", prompt, len(l.Lights))
	}
}

func FuzzParsePrompt(f *testing.F) {
	for _, s := range []string{
		"", "warm key light from the left, cool blue rim light from behind", "3200K tungsten",
		"45° key", "1e400k", "....", "light light light light light light light light light light",
		"neon\x00city", "90 degrees 90 degrees", "lumière chaude à gauche", "0.5.5k",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkLighting(t, s, Parse(s))
	})
}

func TestParsePromptColouredPair(t *testing.T) {
	l := Parse("neon pink and blue lights, cyberpunk street")
	if len(l.Lights) != 2 {
		t.Fatalf("%d lights, want 2: %+v", len(l.Lights), l.Lights)
	}
	a, b := l.Lights[0], l.Lights[1]
	if !(a.Color[0] > a.Color[1]) || !(b.Color[2] > b.Color[0]) {
		t.Fatalf("colours %v and %v, want pink then blue", a.Color, b.Color)
	}
	if a.Dir[0]*b.Dir[0] >= 0 {
		t.Fatalf("directions %v and %v, want opposite sides", a.Dir, b.Dir)
	}
	if l.Scene != SceneNeon || len(l.Backdrop) != 0 {
		t.Fatalf("scene %v backdrop %v", l.Scene, l.Backdrop)
	}
	w := Parse("headshot on a white seamless background, softbox key from camera left")
	if len(w.Backdrop) != 1 || !(colour.Luminance(w.Backdrop[0]) > 0.8) {
		t.Fatalf("white backdrop: %v", w.Backdrop)
	}
	if len(w.Lights) != 1 || w.Lights[0].Dir[0] >= 0 || w.Lights[0].Hardness > 0.3 {
		t.Fatalf("softbox key: %+v", w.Lights)
	}
}

// TestParsePromptFocus: focus words, the default, the last named winning,
// and "sharp" alone (hard light) leaving the focus alone.
func TestParsePromptFocus(t *testing.T) {
	for p, want := range map[string]Focus{
		"":                                 FocusMatch,
		"warm key light from the left":     FocusMatch,
		"sharp light from the left":        FocusMatch,
		"shallow focus, sunset":            FocusShallow,
		"shallow depth of field":           FocusShallow,
		"city at night with bokeh":         FocusShallow,
		"Blurred background":               FocusShallow,
		"deep focus, beach":                FocusDeep,
		"sharp background, hard light":     FocusDeep,
		"deep depth of field":              FocusDeep,
		"shallow focus. no: deep focus":    FocusDeep,
		"deep blue rim light":              FocusMatch,
		"crisp backdrop then blurry beach": FocusShallow,
		"focused background":               FocusDeep,
	} {
		if got := Parse(p).Focus; got != want {
			t.Errorf("%q: focus %v, want %v", p, got, want)
		}
	}
	if FocusDeep.String() != "deep" || Focus(7).String() != "focus(?)" {
		t.Error("Focus.String")
	}
}
