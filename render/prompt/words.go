// The word tables of the prompt parser: which words name lights, roles,
// colours, temperatures, scenes, times of day, directions and strengths.

package prompt

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
