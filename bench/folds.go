package bench

import "slices"

// The two fixed development folds of the 30 DAVIS-2016 train clips in
// ../shared/datasets/davis2016-train. A rule, constant or fitted model is
// chosen (or fitted) on one fold and kept only if it also wins on the
// other: the figures of the fold it was not fitted on are the honest ones.
//
// The split is fixed by hand once, by what makes a clip hard, and balanced
// within each kind (not by score, so that no fold is easy by construction):
//   - fast motion and articulated limbs, 12 clips, 6 + 6;
//   - thin parts or a subject the network does not see alone (non-salient,
//     a flock, a rider merged with the vehicle), 7 clips, 4 + 3;
//   - large, steady subjects, 11 clips, 5 + 6.
var (
	FoldA = []string{
		// fast
		"bmx-bumps", "breakdance-flare", "drift-turn", "hockey", "horsejump-low", "soccerball",
		// thin or non-salient
		"flamingo", "kite-walk", "stroller", "swing",
		// large, steady
		"bear", "bus", "elephant", "lucia", "rhino",
	}
	FoldB = []string{
		// fast
		"dance-jump", "dog-agility", "mallard-fly", "motocross-bumps", "rollerblade", "tennis",
		// thin or non-salient
		"motorbike", "paragliding", "scooter-gray",
		// large, steady
		"boat", "car-turn", "hike", "mallard-water", "surf", "train",
	}
)

// FoldOf is the fold ("A" or "B") of a clip of the development set, or ""
// for a clip in neither (other footage).
func FoldOf(clip string) string {
	switch {
	case slices.Contains(FoldA, clip):
		return "A"
	case slices.Contains(FoldB, clip):
		return "B"
	}
	return ""
}

// FoldClips returns the clips of fold "A" or "B" (nil for another name).
func FoldClips(fold string) []string {
	switch fold {
	case "A":
		return FoldA
	case "B":
		return FoldB
	}
	return nil
}
