// The prompt parser: ParsePrompt reads a prompt's words, clause by clause,
// into a Lighting.

package render

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

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
