package render

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

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
// use ParsePrompt.
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
}

// maxPromptTokens bounds the work on very long prompts (the API allows
// 2000 characters; this is far above what that yields).
const maxPromptTokens = 4096

// Words that introduce or name a light.
var lightWords = map[string]bool{
	"light": true, "lights": true, "lighting": true, "lit": true, "lamp": true, "lamps": true,
	"spotlight": true, "spotlights": true, "spot": true, "softbox": true, "strobe": true, "flash": true,
	"key": true, "fill": true, "rim": true, "kicker": true, "hair": true, "backlight": true,
	"backlit": true, "backlighting": true, "sidelight": true, "sidelit": true, "toplight": true,
	"illumination": true, "illuminated": true, "beam": true, "sun": true, "sunlight": true,
	"sunlit": true, "moonlight": true, "moonlit": true, "candle": true, "candlelight": true,
	"candles": true, "firelight": true, "window": true, "bounce": true, "uplight": true,
	"uplighting": true, "underlight": true, "glow": true, "keylight": true, "rimlight": true,
	"filllight": true, "lantern": true, "torch": true, "headlights": true, "practical": true,
	"campfire": true, "bonfire": true, "fireplace": true, "moon": true, "rembrandt": true,
	"butterfly": true, "paramount": true,
}

var roleWords = map[string]LightRole{
	"key": RoleKey, "main": RoleKey, "keylight": RoleKey,
	"fill": RoleFill, "bounce": RoleFill, "filllight": RoleFill,
	"rim": RoleRim, "kicker": RoleRim, "hair": RoleRim, "edge": RoleRim, "rimlight": RoleRim,
	"backlight": RoleRim, "backlit": RoleRim, "backlighting": RoleRim,
}

// Kelvin of temperature words.
var kelvinWords = map[string]float32{
	"candle": 1900, "candlelight": 1900, "candles": 1900, "firelight": 1900, "fire": 1900,
	"fireplace": 1900, "campfire": 1900, "torch": 2000, "lantern": 2200,
	"tungsten": 3200, "incandescent": 2900, "halogen": 3200, "warm": 3400, "warmer": 3100,
	"daylight": 5600, "sunlight": 5600, "flash": 5600, "strobe": 5600, "neutral": 5600,
	"led": 5000, "fluorescent": 4200, "overcast": 6800, "cloudy": 6800, "shade": 7500,
	"cool": 7600, "cooler": 8200, "cold": 8500, "icy": 9500, "moonlight": 8500, "moonlit": 8500,
}

// Named colours as sRGB (0..255).
var colourWords = map[string][3]uint8{
	"red": {225, 40, 35}, "crimson": {200, 25, 60}, "scarlet": {235, 45, 30},
	"orange": {255, 128, 30}, "amber": {255, 170, 35}, "gold": {255, 196, 70},
	"golden": {255, 196, 70}, "yellow": {255, 222, 60}, "lime": {160, 230, 50},
	"green": {60, 180, 75}, "emerald": {40, 160, 100}, "teal": {0, 150, 140},
	"cyan": {0, 200, 230}, "turquoise": {40, 210, 200}, "aqua": {60, 220, 220},
	"blue": {40, 95, 235}, "azure": {50, 130, 240}, "navy": {25, 35, 110},
	"purple": {130, 50, 200}, "violet": {140, 70, 230}, "lavender": {180, 160, 230},
	"magenta": {230, 40, 200}, "fuchsia": {240, 50, 190}, "pink": {255, 120, 175},
	"rose": {240, 100, 130}, "white": {245, 245, 245}, "silver": {190, 195, 200},
	"grey": {128, 128, 128}, "gray": {128, 128, 128}, "black": {14, 14, 16},
	"brown": {120, 75, 40}, "beige": {220, 200, 160}, "cream": {245, 235, 205},
	"peach": {255, 190, 150}, "coral": {255, 120, 95}, "mint": {150, 235, 190},
	"indigo": {75, 40, 170}, "maroon": {120, 20, 30},
}

var sceneWords = map[string]Scene{
	"studio": SceneStudio, "backdrop": SceneStudio, "seamless": SceneStudio, "headshot": SceneStudio,
	"exterior": SceneExterior, "outdoor": SceneExterior, "outdoors": SceneExterior,
	"outside": SceneExterior, "field": SceneExterior, "meadow": SceneExterior,
	"countryside": SceneExterior, "mountain": SceneExterior, "mountains": SceneExterior,
	"beach": SceneBeach, "ocean": SceneBeach, "sea": SceneBeach, "coast": SceneBeach,
	"seaside": SceneBeach, "tropical": SceneBeach, "shore": SceneBeach,
	"forest": SceneForest, "woods": SceneForest, "jungle": SceneForest, "trees": SceneForest,
	"park": SceneForest, "garden": SceneForest, "nature": SceneForest,
	"city": SceneCity, "urban": SceneCity, "street": SceneCity, "downtown": SceneCity,
	"skyline": SceneCity, "alley": SceneCity, "rooftop": SceneCity,
	"desert": SceneDesert, "dunes": SceneDesert, "dune": SceneDesert, "canyon": SceneDesert,
	"snow": SceneSnow, "snowy": SceneSnow, "winter": SceneSnow, "arctic": SceneSnow, "ice": SceneSnow,
	"office": SceneInterior, "interior": SceneInterior, "indoor": SceneInterior,
	"indoors": SceneInterior, "room": SceneInterior, "home": SceneInterior,
	"kitchen": SceneInterior, "cafe": SceneInterior, "restaurant": SceneInterior,
	"library": SceneInterior, "bedroom": SceneInterior, "livingroom": SceneInterior,
	"neon": SceneNeon, "cyberpunk": SceneNeon, "club": SceneNeon, "nightclub": SceneNeon,
	"synthwave": SceneNeon,
}

var timeWords = map[string]TimeOfDay{
	"sunrise": TimeSunrise, "dawn": TimeSunrise, "daybreak": TimeSunrise,
	"day": TimeDay, "daytime": TimeDay, "noon": TimeDay, "midday": TimeDay, "sunny": TimeDay,
	"morning": TimeDay, "afternoon": TimeDay,
	"goldenhour": TimeGolden,
	"sunset":     TimeSunset, "sundown": TimeSunset, "evening": TimeSunset,
	"dusk": TimeDusk, "twilight": TimeDusk, "bluehour": TimeDusk,
	"night": TimeNight, "nighttime": TimeNight, "midnight": TimeNight, "moonlight": TimeNight,
	"moonlit": TimeNight, "nocturnal": TimeNight,
	"overcast": TimeOvercast, "cloudy": TimeOvercast, "rainy": TimeOvercast, "foggy": TimeOvercast,
}

var softWords = map[string]bool{
	"soft": true, "softer": true, "softbox": true, "diffuse": true, "diffused": true,
	"gentle": true, "window": true, "overcast": true, "cloudy": true, "bounce": true,
	"wrapping": true, "feathered": true, "even": true, "smooth": true,
}

var hardWords = map[string]bool{
	"hard": true, "harder": true, "harsh": true, "direct": true, "crisp": true, "sharp": true,
	"spotlight": true, "spot": true, "strobe": true, "flash": true, "dramatic": true,
	"noon": true, "midday": true, "sun": true, "sunlight": true, "specular": true,
	"punchy": true, "bare": true,
}

// Global brightness words and their factor.
var intensityWords = map[string]float32{
	"bright": 1.2, "brighter": 1.25, "brilliant": 1.25, "luminous": 1.2, "highkey": 1.25,
	"airy": 1.15, "radiant": 1.2, "vivid": 1.1, "sunny": 1.1,
	"dim": 0.8, "dimmer": 0.75, "dark": 0.75, "darker": 0.7, "moody": 0.8, "lowkey": 0.7,
	"gloomy": 0.75, "shadowy": 0.8, "subdued": 0.85, "noir": 0.75,
}

// Global contrast words and their factor.
var contrastWords = map[string]float32{
	"dramatic": 1.35, "highcontrast": 1.4, "contrasty": 1.3, "chiaroscuro": 1.5,
	"noir": 1.45, "lowkey": 1.35, "moody": 1.2, "harsh": 1.2, "punchy": 1.2,
	"flat": 0.75, "lowcontrast": 0.75, "even": 0.85, "highkey": 0.8, "overcast": 0.8,
}

// Per-light strength words.
var lightGainWords = map[string]float32{
	"strong": 1.3, "intense": 1.35, "bright": 1.25, "powerful": 1.3,
	"dim": 0.6, "faint": 0.5, "subtle": 0.6, "weak": 0.55, "slight": 0.6, "gentle": 0.75,
}

// Multi-word expressions merged into one token before parsing.
var bigrams = map[[2]string]string{
	{"golden", "hour"}: "goldenhour", {"magic", "hour"}: "goldenhour", {"blue", "hour"}: "bluehour",
	{"high", "key"}: "highkey", {"low", "key"}: "lowkey", {"back", "light"}: "backlight",
	{"back", "lit"}: "backlit", {"back", "lighting"}: "backlighting", {"soft", "box"}: "softbox",
	{"high", "contrast"}: "highcontrast", {"low", "contrast"}: "lowcontrast",
	{"head", "on"}: "front", {"top", "down"}: "top", {"candle", "light"}: "candlelight",
	{"sun", "light"}: "sunlight", {"moon", "light"}: "moonlight", {"day", "light"}: "daylight",
	{"fire", "light"}: "firelight", {"living", "room"}: "livingroom", {"side", "light"}: "sidelight",
	{"top", "light"}: "toplight", {"night", "time"}: "nighttime", {"day", "time"}: "daytime",
	{"key", "light"}: "keylight", {"rim", "light"}: "rimlight", {"fill", "light"}: "filllight",
	{"under", "light"}: "underlight", {"up", "light"}: "uplight",
}

// Direction words: which axis they move and which way.
const (
	dirLeft = iota + 1
	dirRight
	dirUp
	dirDown
	dirFront
	dirBack
	dirSide
)

var directionWords = map[string]int{
	"left": dirLeft, "right": dirRight,
	"top": dirUp, "above": dirUp, "overhead": dirUp, "up": dirUp, "high": dirUp, "ceiling": dirUp,
	"toplight": dirUp, "zenith": dirUp, "upper": dirUp,
	"below": dirDown, "under": dirDown, "underneath": dirDown, "bottom": dirDown, "low": dirDown,
	"uplight": dirDown, "uplighting": dirDown, "underlight": dirDown, "floor": dirDown,
	"ground": dirDown, "lower": dirDown, "beneath": dirDown,
	"front": dirFront, "frontal": dirFront, "camera": dirFront, "facing": dirFront, "ahead": dirFront,
	"back": dirBack, "behind": dirBack, "rear": dirBack, "backlit": dirBack, "backlight": dirBack,
	"backlighting": dirBack,
	"side":         dirSide, "sidelight": dirSide, "sidelit": dirSide, "lateral": dirSide, "profile": dirSide,
}

// Words that end a clause (besides punctuation).
var clauseBreaks = map[string]bool{"and": true, "while": true, "but": true, "plus": true, "then": true}

// clause collects what one clause of the prompt says about a light.
type clause struct {
	light     bool // names a light
	role      LightRole
	roleSet   bool
	dirs      [8]int // counts per direction word kind
	angle     float64
	hasAngle  bool
	colours   [][3]float32
	kelvin    float32
	hardness  float32
	hasHard   bool
	gain      float32
	hasTarget bool // has direction words
	hint      int  // a lightHints entry + 1, or 0
	andNext   bool // the clause ended with "and"
}

// Kinds of light whose usual direction is implied by the word.
const (
	hintBelow     = iota + 1 // campfire, fireplace: low, in front
	hintCandle               // candle: a little below, in front
	hintAbove                // spotlight: from above
	hintWindow               // window: from the side
	hintSky                  // sun, moon: the scene's default key direction
	hintRembrandt            // 45 degrees to the side and above
	hintButterfly            // in front and above (paramount)
	hintSplit                // 90 degrees to the side
	hintLoop                 // 30 degrees to the side, a little above
)

var lightHints = map[string]int{
	"campfire": hintBelow, "fire": hintBelow, "firelight": hintBelow, "bonfire": hintBelow,
	"fireplace": hintBelow, "candle": hintCandle, "candles": hintCandle, "candlelight": hintCandle,
	"spotlight": hintAbove, "spot": hintAbove, "window": hintWindow, "sun": hintSky,
	"sunlight": hintSky, "sunlit": hintSky, "moonlight": hintSky, "moonlit": hintSky, "moon": hintSky,
	"rembrandt": hintRembrandt, "butterfly": hintButterfly, "paramount": hintButterfly,
	"split": hintSplit, "loop": hintLoop,
}

// ParsePrompt reads the lighting a prompt asks for: directions, colour
// temperatures, named colours, hardness, intensity, contrast, rim and back
// lights, time of day and the kind of scene. It is deterministic, never
// fails and ignores words it does not know; an empty prompt gives a
// neutral studio with ambient light only.
func ParsePrompt(prompt string) Lighting {
	toks := tokenize(prompt)
	l := Lighting{Intensity: 1, Contrast: 1, Scene: SceneStudio}
	sceneSet := false
	var clauses []*clause
	cur := &clause{gain: 1}
	var globalHard float32
	globalHardSet := false
	var kelvinWordTemp float32
	flush := func() {
		clauses = append(clauses, cur)
		cur = &clause{gain: 1}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t == "," || clauseBreaks[t] {
			cur.andNext = t == "and"
			flush()
			continue
		}
		if h, ok := lightHints[t]; ok && cur.hint == 0 {
			cur.hint = h
		}
		// Numbers: Kelvin ("3200k", "3200 k", "3200 kelvin") and angles
		// ("45 degrees", "45°").
		if n, rest, ok := leadingNumber(t); ok {
			next := ""
			if i+1 < len(toks) {
				next = toks[i+1]
			}
			switch {
			case (rest == "k" || rest == "kelvin") && n >= 1000 && n <= 40000:
				cur.kelvin = float32(n)
				l.Temperature = float32(n)
			case rest == "" && (next == "k" || next == "kelvin") && n >= 1000 && n <= 40000:
				cur.kelvin = float32(n)
				l.Temperature = float32(n)
				i++
			case (rest == "deg" || rest == "degree" || rest == "degrees") && n <= 360:
				cur.angle, cur.hasAngle = n, true
			case rest == "" && (next == "degree" || next == "degrees" || next == "deg") && n <= 360:
				cur.angle, cur.hasAngle = n, true
				i++
			}
			continue
		}
		if lightWords[t] {
			cur.light = true
		}
		if r, ok := roleWords[t]; ok && !cur.roleSet {
			cur.role, cur.roleSet = r, true
			cur.light = true
		}
		if d, ok := directionWords[t]; ok {
			cur.dirs[d]++
			cur.hasTarget = true
		}
		if k, ok := kelvinWords[t]; ok {
			if cur.kelvin == 0 {
				cur.kelvin = k
			}
			if kelvinWordTemp == 0 {
				kelvinWordTemp = k
			}
		}
		if c, ok := colourWords[t]; ok {
			lin := srgb8ToLinear(c)
			cur.colours = append(cur.colours, lin)
			l.Palette = appendUnique(l.Palette, lin)
		}
		if softWords[t] {
			cur.hardness, cur.hasHard = 0.15, true
		}
		if hardWords[t] {
			cur.hardness, cur.hasHard = 0.85, true
		}
		if g, ok := lightGainWords[t]; ok {
			cur.gain *= g
		}
		if s, ok := sceneWords[t]; ok && !sceneSet {
			l.Scene, sceneSet = s, true
		}
		if tm, ok := timeWords[t]; ok && l.Time == TimeUnspecified {
			l.Time = tm
		}
		if f, ok := intensityWords[t]; ok {
			l.Intensity *= f
		}
		if f, ok := contrastWords[t]; ok {
			l.Contrast *= f
		}
	}
	flush()
	if l.Temperature == 0 {
		l.Temperature = kelvinWordTemp
	}
	if !sceneSet && l.Time != TimeUnspecified {
		l.Scene = SceneExterior
	}
	if l.Scene == SceneNeon && l.Time == TimeUnspecified {
		l.Time = TimeNight
	}

	// Clauses that name no light but give a direction (or hardness)
	// refine the previous light; colours and temperatures without a light
	// stay global (palette, Temperature).
	for i, c := range clauses {
		if !c.light && !c.hasTarget && len(c.colours) > 0 && c.andNext && i+1 < len(clauses) {
			if nx := clauses[i+1]; nx.light && len(nx.colours) > 0 {
				// "pink and blue lights": one light per colour, the
				// second a kicker from the other side.
				c.light, c.hint = true, nx.hint
				if !nx.roleSet {
					nx.role, nx.roleSet = RoleRim, true
				}
				if !c.hasHard && nx.hasHard {
					c.hardness, c.hasHard = nx.hardness, true
				}
			}
		}
	}
	var lightClauses []*clause
	var globalKelvin float32
	for _, c := range clauses {
		switch {
		case c.light:
			lightClauses = append(lightClauses, c)
		case c.hasTarget && len(lightClauses) > 0:
			prev := lightClauses[len(lightClauses)-1]
			for k := range c.dirs {
				prev.dirs[k] += c.dirs[k]
			}
			if c.hasAngle {
				prev.angle, prev.hasAngle = c.angle, true
			}
			prev.hasTarget = true
		case c.hasTarget:
			c.light = true
			lightClauses = append(lightClauses, c)
		}
		if !c.light && c.hasHard {
			globalHard, globalHardSet = c.hardness, true
		}
		if !c.light && c.kelvin != 0 && globalKelvin == 0 {
			globalKelvin = c.kelvin
		}
		if !c.light {
			for _, col := range c.colours {
				l.Backdrop = appendUnique(l.Backdrop, col)
			}
		}
	}

	keySide := float32(-1) // the key comes from the left unless told
	haveKey := false
	for _, c := range lightClauses {
		lt := buildLight(c, &l, globalKelvin, keySide, haveKey)
		if lt.Role == RoleKey && !haveKey {
			haveKey = true
			if lt.Dir[0] > 0.05 {
				keySide = 1
			} else if lt.Dir[0] < -0.05 {
				keySide = -1
			}
		}
		if !c.hasHard && globalHardSet {
			lt.Hardness = globalHard
		}
		l.Lights = append(l.Lights, lt)
		if len(l.Lights) >= 8 {
			break
		}
	}
	l.Explicit = len(l.Lights) > 0
	if len(l.Lights) == 0 && (sceneSet || l.Time != TimeUnspecified) {
		l.Lights = sceneLights(&l, globalKelvin)
		if globalHardSet {
			for i := range l.Lights {
				l.Lights[i].Hardness = globalHard
			}
		}
	}
	for _, lt := range l.Lights {
		if lt.Dir[2] < -0.2 {
			l.Rim = true
		}
	}
	l.Ambient = sceneAmbient(&l, globalKelvin)
	l.Intensity = clamp32(l.Intensity, 0.5, 1.6)
	l.Contrast = clamp32(l.Contrast, 0.6, 1.8)
	return l
}

// buildLight turns a light clause into a Light.
func buildLight(c *clause, l *Lighting, globalKelvin, keySide float32, haveKey bool) Light {
	role := c.role
	if !c.roleSet {
		role = RoleKey
		if haveKey {
			role = RoleFill
		}
		if c.dirs[dirBack] > 0 {
			role = RoleRim
		}
	}
	var strength float32 = 1
	var hard float32 = 0.5
	switch role {
	case RoleFill:
		strength, hard = 0.45, 0.25
	case RoleRim:
		strength, hard = 0.8, 0.6
	}
	if c.hasHard {
		hard = c.hardness
	}
	dir := lightDirection(c, role, keySide)
	switch {
	case c.hint != 0 && !c.hasTarget && !c.hasAngle:
		dir = hintDirection(c.hint, role, keySide, l)
	case !c.hasTarget && !c.hasAngle && role == RoleKey && l.Time != TimeUnspecified && outdoor(l.Scene):
		// A key with no direction outdoors comes from where the scene's
		// sun (or moon) is, brought round to the side if that is behind.
		d := hintDirection(hintSky, role, keySide, l)
		if d[2] < 0.3 {
			d[2] = 0.3
		}
		dir = normalize3(d)
	}
	switch c.hint {
	case hintAbove:
		hard = max(hard, 0.75)
	case hintWindow:
		if !c.hasHard {
			hard = 0.2
		}
	}

	// Colour: the clause's temperature, else the global one, else the
	// scene's; tinted by a named colour when the clause names one.
	kelvin := c.kelvin
	if kelvin == 0 {
		kelvin = globalKelvin
	}
	if kelvin == 0 {
		kelvin = sceneKelvin(l)
	}
	col := kelvinTint(kelvin, 0.75)
	if len(c.colours) > 0 {
		var named [3]float32
		for _, cc := range c.colours {
			for k := range named {
				named[k] += cc[k] / float32(len(c.colours))
			}
		}
		// Gels are saturated but a light is never a pure primary: keep
		// some white so no channel collapses to zero.
		named = normLum(named)
		for k := range col {
			col[k] = 0.25*col[k] + 0.75*named[k]
		}
		col = desaturate(col, 0.8)
	}
	col = normLum(col)
	g := strength * c.gain
	for k := range col {
		col[k] *= g
	}
	return Light{Dir: dir, Color: col, Hardness: clamp32(hard, 0, 1), Role: role}
}

// lightDirection composes the direction words of a clause into a unit
// vector. Horizontal words (left/right) without a depth word give a
// 45-degree front-side light; with no vertical word the light sits a
// little above the subject (y 0.25); an angle ("45 degrees") sets the
// azimuth from the camera axis toward the named side.
func lightDirection(c *clause, role LightRole, keySide float32) [3]float32 {
	var x, y, z float32
	x = float32(c.dirs[dirRight] - c.dirs[dirLeft])
	y = float32(c.dirs[dirUp] - c.dirs[dirDown])
	depth := float32(c.dirs[dirFront] - c.dirs[dirBack])
	side := c.dirs[dirSide] > 0
	if x != 0 {
		x = sign32(x)
	}
	if y != 0 {
		y = sign32(y)
	}
	if depth != 0 {
		depth = sign32(depth)
	}
	none := x == 0 && y == 0 && depth == 0 && !side && !c.hasAngle
	if none {
		switch role {
		case RoleFill:
			return normalize3([3]float32{-keySide * 0.6, 0.1, 0.8})
		case RoleRim:
			return normalize3([3]float32{-keySide * 0.6, 0.3, -0.75})
		}
		return normalize3([3]float32{keySide * 0.55, 0.4, 0.75})
	}
	if role == RoleRim && depth == 0 {
		depth = -1
	}
	if (side || c.hasAngle || role == RoleRim) && x == 0 {
		// A side light or rim on no named side: opposite the key for
		// fills and rims, the key's side otherwise.
		if role == RoleKey {
			x = keySide
		} else {
			x = -keySide
		}
	}
	if c.hasAngle {
		a := float64(c.angle) * math.Pi / 180
		zz := float32(math.Cos(a))
		if depth < 0 {
			zz = -float32(math.Abs(float64(zz)))
		}
		v := [3]float32{x * float32(math.Abs(math.Sin(a))), y * 0.4, zz}
		if y == 0 {
			v[1] = 0.15
		}
		return normalize3(v)
	}
	switch {
	case side && depth == 0:
		z = 0.1
	case depth != 0:
		z = depth
		if x != 0 {
			z *= 0.8
		}
	case x != 0:
		z = 0.8 // a 45-degree key from the side
	case y != 0:
		z = 0.35 // overhead or from below, a little toward the camera
	}
	if y == 0 {
		y = 0.25
	}
	if y > 0 && x == 0 && depth == 0 && !side {
		y = 1
	}
	return normalize3([3]float32{x, y, z})
}

// outdoor reports whether a scene is lit by the sky.
func outdoor(s Scene) bool {
	return s != SceneStudio && s != SceneInterior && s != SceneNeon
}

// hintDirection is the usual direction of a kind of light (a campfire is
// low, a spotlight high, the sun where the scene puts it); fills and rims
// keep their roles' directions.
func hintDirection(hint int, role LightRole, keySide float32, l *Lighting) [3]float32 {
	if role != RoleKey && hint != hintSky {
		return lightDirection(&clause{}, role, keySide)
	}
	var v [3]float32
	switch hint {
	case hintBelow:
		v = [3]float32{keySide * 0.45, -0.55, 0.7}
	case hintCandle:
		v = [3]float32{keySide * 0.4, -0.2, 0.9}
	case hintAbove:
		v = [3]float32{keySide * 0.25, 0.85, 0.45}
	case hintWindow:
		v = [3]float32{keySide * 0.9, 0.15, 0.4}
	case hintRembrandt:
		v = [3]float32{keySide * 0.65, 0.5, 0.65}
	case hintButterfly:
		v = [3]float32{0, 0.55, 0.85}
	case hintSplit:
		v = [3]float32{keySide, 0.1, 0.05}
	case hintLoop:
		v = [3]float32{keySide * 0.45, 0.35, 0.85}
	case hintSky:
		if ls := sceneLights(&Lighting{Scene: SceneExterior, Time: l.Time}, 0); len(ls) > 0 && l.Time != TimeUnspecified {
			return ls[0].Dir
		}
		v = [3]float32{keySide * 0.45, 0.8, 0.4}
	}
	return normalize3(v)
}

// sceneKelvin is the default colour temperature of the scene's lights.
func sceneKelvin(l *Lighting) float32 {
	switch l.Time {
	case TimeSunrise:
		return 3300
	case TimeGolden:
		return 3000
	case TimeSunset:
		return 2500
	case TimeDusk:
		return 7500
	case TimeNight:
		return 8000
	case TimeOvercast:
		return 6800
	case TimeDay:
		return 5600
	}
	if l.Scene == SceneInterior {
		return 4300
	}
	return 5600
}

// sceneLights are the default lights of a scene or time of day when the
// prompt names no light.
func sceneLights(l *Lighting, globalKelvin float32) []Light {
	mk := func(dir [3]float32, kelvin, strength, hard float32, role LightRole) Light {
		if globalKelvin != 0 && role == RoleKey {
			kelvin = globalKelvin
		}
		c := normLum(kelvinTint(kelvin, 0.75))
		for k := range c {
			c[k] *= strength
		}
		return Light{Dir: normalize3(dir), Color: c, Hardness: hard, Role: role}
	}
	coloured := func(dir [3]float32, col [3]float32, strength, hard float32, role LightRole) Light {
		c := normLum(desaturate(normLum(col), 0.8))
		for k := range c {
			c[k] *= strength
		}
		return Light{Dir: normalize3(dir), Color: c, Hardness: hard, Role: role}
	}
	if l.Scene == SceneNeon {
		a, b := srgb8ToLinear([3]uint8{230, 40, 200}), srgb8ToLinear([3]uint8{0, 200, 230})
		if len(l.Palette) > 0 {
			a = l.Palette[0]
		}
		if len(l.Palette) > 1 {
			b = l.Palette[1]
		}
		return []Light{
			coloured([3]float32{-0.85, 0.15, 0.35}, a, 1, 0.55, RoleKey),
			coloured([3]float32{0.85, 0.15, 0.2}, b, 0.8, 0.55, RoleRim),
		}
	}
	switch l.Time {
	case TimeSunrise:
		return []Light{mk([3]float32{0.8, 0.2, 0.35}, 3300, 1, 0.55, RoleKey)}
	case TimeGolden:
		return []Light{mk([3]float32{-0.8, 0.25, 0.3}, 3000, 1, 0.7, RoleKey)}
	case TimeSunset:
		return []Light{
			mk([3]float32{-0.75, 0.15, -0.5}, 2400, 1, 0.7, RoleRim),
			mk([3]float32{0.3, 0.3, 0.9}, 7000, 0.35, 0.1, RoleFill),
		}
	case TimeDusk:
		return []Light{mk([3]float32{0.5, 0.5, 0.6}, 8000, 0.6, 0.2, RoleKey)}
	case TimeNight:
		return []Light{
			mk([3]float32{0.5, 0.7, 0.3}, 8500, 0.7, 0.35, RoleKey),
			mk([3]float32{-0.7, 0.1, -0.4}, 2700, 0.5, 0.5, RoleRim),
		}
	case TimeOvercast:
		return []Light{mk([3]float32{0.1, 1, 0.35}, 6800, 0.7, 0.05, RoleKey)}
	case TimeDay:
		return []Light{mk([3]float32{0.45, 0.8, 0.4}, 5600, 1, 0.85, RoleKey)}
	}
	switch l.Scene {
	case SceneStudio:
		return []Light{
			mk([3]float32{-0.55, 0.4, 0.75}, 5600, 1, 0.3, RoleKey),
			mk([3]float32{0.6, 0.1, 0.8}, 5600, 0.35, 0.15, RoleFill),
		}
	case SceneInterior:
		return []Light{
			mk([3]float32{-0.9, 0.2, 0.35}, 6000, 1, 0.25, RoleKey),
			mk([3]float32{0.6, 0.3, 0.5}, 2900, 0.3, 0.3, RoleFill),
		}
	case SceneForest:
		return []Light{mk([3]float32{0.3, 0.85, 0.35}, 5000, 0.9, 0.45, RoleKey)}
	}
	return []Light{mk([3]float32{0.45, 0.8, 0.4}, 5600, 1, 0.8, RoleKey)}
}

// sceneAmbient is the ambient light of the setup: a fraction of the key
// that depends on the time of day, tinted by the sky (or room).
func sceneAmbient(l *Lighting, globalKelvin float32) [3]float32 {
	var lum, kelvin float32 = 0.3, 6500
	switch l.Time {
	case TimeOvercast:
		lum, kelvin = 0.6, 6800
	case TimeDay:
		lum, kelvin = 0.3, 9000 // blue sky
	case TimeGolden, TimeSunrise:
		lum, kelvin = 0.3, 7000
	case TimeSunset:
		lum, kelvin = 0.3, 9000
	case TimeDusk:
		lum, kelvin = 0.45, 11000
	case TimeNight:
		lum, kelvin = 0.3, 11000
	}
	if globalKelvin != 0 {
		kelvin = globalKelvin
	}
	if len(l.Lights) == 0 {
		lum = 1
	}
	return scale3(normLum(kelvinTint(kelvin, 0.5)), lum)
}

// tokenize lower-cases the prompt and splits it into words; punctuation
// that ends a clause becomes ",", "°" becomes "degree", and known
// two-word expressions are merged.
func tokenize(s string) []string {
	if len(s) > 8192 {
		s = s[:8192]
	}
	var toks []string
	var b strings.Builder
	emit := func() {
		if b.Len() > 0 {
			toks = append(toks, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		if len(toks) >= maxPromptTokens {
			break
		}
		switch {
		case r == '°' || r == 'º':
			emit()
			toks = append(toks, "degree")
		case r == ',' || r == ';' || r == '.' || r == '!' || r == '?' || r == ':' || r == '\n' || r == '(' || r == ')':
			// A decimal point inside a number is not a clause break.
			if r == '.' && b.Len() > 0 && isDigits(b.String()) {
				b.WriteRune(r)
				continue
			}
			emit()
			toks = append(toks, ",")
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			emit()
		}
	}
	emit()
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		if i+1 < len(toks) {
			if m, ok := bigrams[[2]string{toks[i], toks[i+1]}]; ok {
				out = append(out, m)
				i++
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// leadingNumber splits a token like "3200k" into 3200 and "k".
func leadingNumber(t string) (float64, string, bool) {
	i := 0
	for i < len(t) && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.') {
		i++
	}
	if i == 0 || i > 12 {
		return 0, "", false
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, "", false
	}
	return n, t[i:], true
}

// KelvinToRGB returns the linear RGB colour of a black body at kelvin
// (Tanner Helland's fit of the blackbody locus, clamped to 1000..40000 K,
// which is close to neutral at 6500 K), normalised to Rec.709
// luminance 1.
func KelvinToRGB(kelvin float32) [3]float32 {
	t := float64(clamp32(kelvin, 1000, 40000)) / 100
	var r, g, b float64
	if t <= 66 {
		r = 255
		g = 99.4708025861*math.Log(t) - 161.1195681661
	} else {
		r = 329.698727446 * math.Pow(t-60, -0.1332047592)
		g = 288.1221695283 * math.Pow(t-60, -0.0755148492)
	}
	switch {
	case t >= 66:
		b = 255
	case t <= 19:
		b = 0
	default:
		b = 138.5177312231*math.Log(t-10) - 305.0447927307
	}
	c := [3]float32{
		srgbToLinear(float32(math.Min(math.Max(r, 0), 255) / 255)),
		srgbToLinear(float32(math.Min(math.Max(g, 0), 255) / 255)),
		srgbToLinear(float32(math.Min(math.Max(b, 0), 255) / 255)),
	}
	// Keep a trace of every channel so the normalisation is finite.
	for k := range c {
		c[k] = max(c[k], 0.002)
	}
	return normLum(c)
}

// kelvinTint is KelvinToRGB mixed with white by amount (0 = white, 1 = the
// full blackbody colour): lights in prompts are usually meant as a tint,
// not an uncorrected cast.
func kelvinTint(kelvin, amount float32) [3]float32 {
	c := KelvinToRGB(kelvin)
	for k := range c {
		c[k] = 1 + amount*(c[k]-1)
	}
	return normLum(c)
}

func luminance(c [3]float32) float32 {
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}

// normLum scales c to luminance 1 (white when c is black).
func normLum(c [3]float32) [3]float32 {
	y := luminance(c)
	if !(y > 1e-6) {
		return [3]float32{1, 1, 1}
	}
	return [3]float32{c[0] / y, c[1] / y, c[2] / y}
}

// desaturate mixes c with its luminance: sat 1 keeps c, 0 gives grey.
func desaturate(c [3]float32, sat float32) [3]float32 {
	y := luminance(c)
	for k := range c {
		c[k] = y + sat*(c[k]-y)
	}
	return c
}

func scale3(c [3]float32, s float32) [3]float32 {
	return [3]float32{c[0] * s, c[1] * s, c[2] * s}
}

func normalize3(v [3]float32) [3]float32 {
	n := float32(math.Sqrt(float64(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])))
	if !(n > 1e-12) {
		return [3]float32{0, 0, 1}
	}
	return [3]float32{v[0] / n, v[1] / n, v[2] / n}
}

func sign32(v float32) float32 {
	if v < 0 {
		return -1
	}
	return 1
}

func clamp32(v, lo, hi float32) float32 {
	if v != v { // NaN
		return lo
	}
	return min(max(v, lo), hi)
}

func appendUnique(p [][3]float32, c [3]float32) [][3]float32 {
	for _, q := range p {
		if q == c {
			return p
		}
	}
	if len(p) >= 16 {
		return p
	}
	return append(p, c)
}

// srgbToLinear is the sRGB transfer curve's inverse.
func srgbToLinear(v float32) float32 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return float32(math.Pow((float64(v)+0.055)/1.055, 2.4))
}

// linearToSRGB is the sRGB transfer curve (input clamped to [0, 1]).
func linearToSRGB(v float32) float32 {
	v = clamp32(v, 0, 1)
	if v <= 0.0031308 {
		return v * 12.92
	}
	return float32(1.055*math.Pow(float64(v), 1/2.4) - 0.055)
}

func srgb8ToLinear(c [3]uint8) [3]float32 {
	return [3]float32{srgbToLinear(float32(c[0]) / 255), srgbToLinear(float32(c[1]) / 255), srgbToLinear(float32(c[2]) / 255)}
}
