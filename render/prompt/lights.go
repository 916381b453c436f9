// The lights of a parsed prompt: a clause's light, its direction, and the
// lights and ambient a scene and time of day imply.

package prompt

import (
	"math"

	"github.com/vfxrender/vfx/render/colour"
)

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
		dir = colour.Normalize3(d)
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
	col := colour.KelvinTint(kelvin, 0.75)
	if len(c.colours) > 0 {
		var named [3]float32
		for _, cc := range c.colours {
			for k := range named {
				named[k] += cc[k] / float32(len(c.colours))
			}
		}
		// Gels are saturated but a light is never a pure primary: keep
		// some white so no channel collapses to zero.
		named = colour.NormLum(named)
		for k := range col {
			col[k] = 0.25*col[k] + 0.75*named[k]
		}
		col = colour.Desaturate(col, 0.8)
	}
	col = colour.NormLum(col)
	g := strength * c.gain
	for k := range col {
		col[k] *= g
	}
	return Light{Dir: dir, Color: col, Hardness: colour.Clamp32(hard, 0, 1), Role: role}
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
		x = colour.Sign32(x)
	}
	if y != 0 {
		y = colour.Sign32(y)
	}
	if depth != 0 {
		depth = colour.Sign32(depth)
	}
	none := x == 0 && y == 0 && depth == 0 && !side && !c.hasAngle
	if none {
		switch role {
		case RoleFill:
			return colour.Normalize3([3]float32{-keySide * 0.6, 0.1, 0.8})
		case RoleRim:
			return colour.Normalize3([3]float32{-keySide * 0.6, 0.3, -0.75})
		}
		return colour.Normalize3([3]float32{keySide * 0.55, 0.4, 0.75})
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
		return colour.Normalize3(v)
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
	return colour.Normalize3([3]float32{x, y, z})
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
	return colour.Normalize3(v)
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
		c := colour.NormLum(colour.KelvinTint(kelvin, 0.75))
		for k := range c {
			c[k] *= strength
		}
		return Light{Dir: colour.Normalize3(dir), Color: c, Hardness: hard, Role: role}
	}
	coloured := func(dir [3]float32, col [3]float32, strength, hard float32, role LightRole) Light {
		c := colour.NormLum(colour.Desaturate(colour.NormLum(col), 0.8))
		for k := range c {
			c[k] *= strength
		}
		return Light{Dir: colour.Normalize3(dir), Color: c, Hardness: hard, Role: role}
	}
	if l.Scene == SceneNeon {
		a, b := colour.SRGB8ToLinear([3]uint8{230, 40, 200}), colour.SRGB8ToLinear([3]uint8{0, 200, 230})
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
	return colour.Scale3(colour.NormLum(colour.KelvinTint(kelvin, 0.5)), lum)
}
