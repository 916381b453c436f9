// The prompt parser: Parse reads a prompt's words, clause by clause,
// into a Lighting.

package prompt

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/vfxrender/vfx/render/colour"
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

// Parse reads the lighting a prompt asks for: directions, colour
// temperatures, named colours, hardness, intensity, contrast, rim and back
// lights, time of day and the kind of scene. It is deterministic, never
// fails and ignores words it does not know; an empty prompt gives a
// neutral studio with ambient light only.
func Parse(prompt string) Lighting {
	ps := promptParser{l: Lighting{Intensity: 1, Contrast: 1, Scene: SceneStudio}, cur: &clause{gain: 1}}
	toks := tokenize(prompt)
	ps.l.Focus = focusOf(toks)
	for i := 0; i < len(toks); i++ {
		i = ps.token(toks, i)
	}
	ps.flush()
	l := &ps.l
	if l.Temperature == 0 {
		l.Temperature = ps.kelvinWordTemp
	}
	if !ps.sceneSet && l.Time != TimeUnspecified {
		l.Scene = SceneExterior
	}
	if l.Scene == SceneNeon && l.Time == TimeUnspecified {
		l.Time = TimeNight
	}
	pairColourClauses(ps.clauses)
	g := gatherLights(ps.clauses, l)
	g.buildLights(l)
	l.Explicit = len(l.Lights) > 0
	if len(l.Lights) == 0 && (ps.sceneSet || l.Time != TimeUnspecified) {
		l.Lights = sceneLights(l, g.kelvin)
		if g.hardSet {
			for i := range l.Lights {
				l.Lights[i].Hardness = g.hard
			}
		}
	}
	for _, lt := range l.Lights {
		if lt.Dir[2] < -0.2 {
			l.Rim = true
		}
	}
	l.Ambient = sceneAmbient(l, g.kelvin)
	l.Intensity = colour.Clamp32(l.Intensity, 0.5, 1.6)
	l.Contrast = colour.Clamp32(l.Contrast, 0.6, 1.8)
	return *l
}

// promptParser is Parse's state over the tokens: the lighting's
// global words, the clauses so far and the current one.
type promptParser struct {
	l              Lighting
	sceneSet       bool
	clauses        []*clause
	cur            *clause
	kelvinWordTemp float32
}

func (ps *promptParser) flush() {
	ps.clauses = append(ps.clauses, ps.cur)
	ps.cur = &clause{gain: 1}
}

// token reads toks[i] (and a following unit word) and returns the index
// of the last token it used.
func (ps *promptParser) token(toks []string, i int) int {
	t, cur := toks[i], ps.cur
	if t == "," || clauseBreaks[t] {
		cur.andNext = t == "and"
		ps.flush()
		return i
	}
	if h, ok := lightHints[t]; ok && cur.hint == 0 {
		cur.hint = h
	}
	if n, rest, ok := leadingNumber(t); ok {
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		return i + ps.number(n, rest, next)
	}
	ps.lightWord(t)
	l := &ps.l
	if s, ok := sceneWords[t]; ok && !ps.sceneSet {
		l.Scene, ps.sceneSet = s, true
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
	return i
}

// number reads a number n with the unit rest glued to it, or next:
// Kelvin ("3200k", "3200 k", "3200 kelvin") and angles ("45 degrees",
// "45°"). It returns 1 when it used next.
func (ps *promptParser) number(n float64, rest, next string) int {
	cur := ps.cur
	switch {
	case (rest == "k" || rest == "kelvin") && n >= 1000 && n <= 40000:
		cur.kelvin = float32(n)
		ps.l.Temperature = float32(n)
	case rest == "" && (next == "k" || next == "kelvin") && n >= 1000 && n <= 40000:
		cur.kelvin = float32(n)
		ps.l.Temperature = float32(n)
		return 1
	case (rest == "deg" || rest == "degree" || rest == "degrees") && n <= 360:
		cur.angle, cur.hasAngle = n, true
	case rest == "" && (next == "degree" || next == "degrees" || next == "deg") && n <= 360:
		cur.angle, cur.hasAngle = n, true
		return 1
	}
	return 0
}

// lightWord reads the words that describe a light in the current clause.
func (ps *promptParser) lightWord(t string) {
	cur := ps.cur
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
		if ps.kelvinWordTemp == 0 {
			ps.kelvinWordTemp = k
		}
	}
	if c, ok := colourWords[t]; ok {
		lin := colour.SRGB8ToLinear(c)
		cur.colours = append(cur.colours, lin)
		ps.l.Palette = colour.AppendUnique(ps.l.Palette, lin)
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
}

// pairColourClauses makes "pink and blue lights" one light per colour,
// the second a kicker from the other side.
func pairColourClauses(clauses []*clause) {
	for i, c := range clauses {
		if !c.light && !c.hasTarget && len(c.colours) > 0 && c.andNext && i+1 < len(clauses) {
			if nx := clauses[i+1]; nx.light && len(nx.colours) > 0 {
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
}

// lightClauses are the clauses that make lights, and the global hardness
// and temperature the others set.
type lightClauses struct {
	clauses []*clause
	hard    float32
	hardSet bool
	kelvin  float32
}

// gatherLights sorts the clauses: those that name no light but give a
// direction (or hardness) refine the previous light; colours and
// temperatures without a light stay global (l's backdrop, the global
// Kelvin).
func gatherLights(clauses []*clause, l *Lighting) (g lightClauses) {
	for _, c := range clauses {
		switch {
		case c.light:
			g.clauses = append(g.clauses, c)
		case c.hasTarget && len(g.clauses) > 0:
			prev := g.clauses[len(g.clauses)-1]
			for k := range c.dirs {
				prev.dirs[k] += c.dirs[k]
			}
			if c.hasAngle {
				prev.angle, prev.hasAngle = c.angle, true
			}
			prev.hasTarget = true
		case c.hasTarget:
			c.light = true
			g.clauses = append(g.clauses, c)
		}
		if !c.light && c.hasHard {
			g.hard, g.hardSet = c.hardness, true
		}
		if !c.light && c.kelvin != 0 && g.kelvin == 0 {
			g.kelvin = c.kelvin
		}
		if !c.light {
			for _, col := range c.colours {
				l.Backdrop = colour.AppendUnique(l.Backdrop, col)
			}
		}
	}
	return g
}

// buildLights appends the lights of the clauses to l (at most 8).
func (g *lightClauses) buildLights(l *Lighting) {
	keySide := float32(-1) // the key comes from the left unless told
	haveKey := false
	for _, c := range g.clauses {
		lt := buildLight(c, l, g.kelvin, keySide, haveKey)
		if lt.Role == RoleKey && !haveKey {
			haveKey = true
			if lt.Dir[0] > 0.05 {
				keySide = 1
			} else if lt.Dir[0] < -0.05 {
				keySide = -1
			}
		}
		if !c.hasHard && g.hardSet {
			lt.Hardness = g.hard
		}
		l.Lights = append(l.Lights, lt)
		if len(l.Lights) >= 8 {
			break
		}
	}
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
