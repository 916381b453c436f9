// Package prompt reads a render prompt's words into a Lighting: what the
// prompt asks for, and the lights, scenes and times of day it is made of.
// Parse (prompt.go) builds it; it is English keywords and clauses.
package prompt

import "strconv"

// Light is one light parsed from a prompt: a distant (directional) light.
type Light struct {
	// Dir is the unit direction toward the light: x right (image right),
	// y up, z toward the camera. "From the left" means from the left of
	// the picture (camera left).
	Dir [3]float32
	// Color is linear RGB and includes the intensity: a key light has
	// luminance about 1, a fill about 0.45.
	Color [3]float32
	// Hardness is 0 for a very soft (large, diffuse) source up to 1 for a
	// hard one (sun, bare spotlight). It sharpens the shading falloff.
	Hardness float32
	// Role says what the light does in the setup.
	Role LightRole
}

// LightRole is the job of a light in a lighting setup.
type LightRole int

const (
	// RoleKey is the main light.
	RoleKey LightRole = iota
	// RoleFill lifts the shadows.
	RoleFill
	// RoleRim comes from behind and outlines the subject.
	RoleRim
)

// String names the role.
func (r LightRole) String() string {
	switch r {
	case RoleFill:
		return "fill"
	case RoleRim:
		return "rim"
	}
	return "key"
}

// Scene is the kind of place the prompt describes; it shapes the
// synthesised backdrop and the default lights.
type Scene int

const (
	// SceneStudio is a photo studio: seamless paper sweep, soft lights.
	SceneStudio Scene = iota
	// SceneExterior is an unspecified outdoor place: sky over a field.
	SceneExterior
	// SceneBeach is sand, sea and sky.
	SceneBeach
	// SceneForest is trees and dappled light.
	SceneForest
	// SceneCity is streets and buildings, with bokeh of city lights.
	SceneCity
	// SceneDesert is dunes under a big sky.
	SceneDesert
	// SceneSnow is a winter landscape.
	SceneSnow
	// SceneInterior is a room or office with a window and lamps.
	SceneInterior
	// SceneNeon is a dark place lit by coloured neon.
	SceneNeon
)

var sceneNames = [...]string{"studio", "exterior", "beach", "forest", "city", "desert", "snow", "interior", "neon"}

// String names the scene.
func (s Scene) String() string {
	if s >= 0 && int(s) < len(sceneNames) {
		return sceneNames[s]
	}
	return "scene(" + strconv.Itoa(int(s)) + ")"
}

// TimeOfDay is the time (or sky condition) the prompt describes.
type TimeOfDay int

const (
	// TimeUnspecified means the prompt named no time of day.
	TimeUnspecified TimeOfDay = iota
	// TimeSunrise is dawn: low, soft, warm-pink light.
	TimeSunrise
	// TimeDay is daytime or noon: high, hard, neutral sun.
	TimeDay
	// TimeGolden is golden hour: low, warm sun.
	TimeGolden
	// TimeSunset is sunset: very low, orange sun, pink-purple sky.
	TimeSunset
	// TimeDusk is dusk, twilight or the blue hour.
	TimeDusk
	// TimeNight is night or moonlight.
	TimeNight
	// TimeOvercast is a cloudy, diffuse sky.
	TimeOvercast
)

var timeNames = [...]string{"unspecified", "sunrise", "day", "golden", "sunset", "dusk", "night", "overcast"}

// String names the time of day.
func (t TimeOfDay) String() string {
	if t >= 0 && int(t) < len(timeNames) {
		return timeNames[t]
	}
	return "time(" + strconv.Itoa(int(t)) + ")"
}

// Lighting is what a prompt asks for. The zero value is not meaningful;
// use Parse.
type Lighting struct {
	// Lights are the directional lights, in the order the prompt names
	// them, or the scene's default lights when it names none. An empty
	// prompt has none (the environment and ambient light only).
	Lights []Light
	// Ambient is the linear RGB light that comes from everywhere.
	Ambient [3]float32
	// Temperature is the colour temperature the prompt names (Kelvin), or
	// 0 when it names none. A number ("3200K") wins over words.
	Temperature float32
	// Intensity scales the subject's exposure: 1 keeps it, "bright" raises
	// it, "dim"/"dark"/"moody" lowers it. Range 0.5..1.6.
	Intensity float32
	// Contrast scales the ratio of directional to ambient light: 1 normal,
	// above 1 for "dramatic"/"low-key", below for "flat"/"even". Range
	// 0.6..1.8.
	Contrast float32
	// Scene is the place; SceneStudio when none is named.
	Scene Scene
	// Time is the time of day; TimeUnspecified when none is named.
	Time TimeOfDay
	// Palette holds every named colour found, in order, as linear RGB
	// (duplicates removed). The backdrop's glows and bokeh use them.
	Palette [][3]float32
	// Backdrop holds the named colours that are not attached to a light
	// ("teal and orange backdrop"), in order: the backdrop's own colours.
	Backdrop [][3]float32
	// Rim is true when some light comes from behind (rim, back light):
	// the light wrap is stronger.
	Rim bool
	// Explicit is true when the prompt named the lights; false when they
	// are a scene's defaults or there are none.
	Explicit bool
	// Focus is the plate's depth of field against the subject's.
	Focus Focus
}
