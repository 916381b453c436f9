package render

// DefaultContactReach is the share of the subject's height above its
// lowest point within which its lowest points get a contact shadow (the
// far feet of a walker or an animal stand higher in the picture than the
// near ones). Params.ContactReach overrides it.
//
// Fitted (session 13) by the look bench on its fold A subjects, the least
// reach of bench/look's ContactReachGrid (1/20 to 1/5) whose worst subject
// of the contact check (the ground 2 to 14 px under the lowest points over
// the plate's, every edge prompt) is at most ContactLimit - ContactMargin
// (0.83):
//
//	vfx bench look --fit-contact-reach
//
// gives 1/8 (worst 0.932 at 1/20 and 1/16, 0.879 at 1/12, 0.871 at 1/10,
// 0.825 at 1/8). Checked, not fitted: fold B (--subjects
// dance-jump,dog-agility,hike,tennis) worst 0.804 at 1/8; the ten
// held-out subjects of issue 31's note 0.837 (within the limit 0.85, not
// the margin). Session 12 had set 1/8 by hand (from 1/20, which left the
// far legs of the bear and the elephant without contact).
const DefaultContactReach = 1.0 / 8

// reach is the contact reach in use.
func (q *lookImages) reach() float64 {
	if q.contactReach > 0 {
		return q.contactReach
	}
	return DefaultContactReach
}
