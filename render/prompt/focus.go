package prompt

// Focus is the depth of field a prompt asks of the plate (the new
// background), against the subject's own sharpness.
type Focus int

const (
	// FocusMatch, the default, defocuses a plate sharper than the subject
	// to the subject's sharpness, as a compositor matches focus.
	FocusMatch Focus = iota
	// FocusShallow ("shallow focus", "shallow depth of field", "bokeh",
	// "defocused" or "blurred background") defocuses the plate well past
	// the subject: the subject in focus, the background not.
	FocusShallow
	// FocusDeep ("deep focus", "sharp background") keeps the plate as
	// sharp as it is.
	FocusDeep
)

var focusNames = [...]string{"match", "shallow", "deep"}

// String names the focus.
func (f Focus) String() string {
	if f >= 0 && int(f) < len(focusNames) {
		return focusNames[f]
	}
	return "focus(?)"
}

// focusWords: a word that asks for a shallow focus on its own.
var focusWords = map[string]bool{"shallow": true, "bokeh": true, "defocused": true, "defocus": true, "blurred": true, "blurry": true}

// focusOf reads the focus from the prompt's tokens: "deep" before
// focus/depth/dof, or sharp/crisp/focused before background/backdrop/plate,
// ask for a deep focus; a shallow word for a shallow one. The last one
// named wins.
func focusOf(toks []string) Focus {
	f := FocusMatch
	for i, t := range toks {
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t == "deep" && (next == "focus" || next == "depth" || next == "dof"),
			(t == "sharp" || t == "crisp" || t == "focused") && (next == "background" || next == "backdrop" || next == "plate"):
			f = FocusDeep
		case focusWords[t]:
			f = FocusShallow
		}
	}
	return f
}
