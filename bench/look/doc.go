// Package look is the look suite of `vfx bench look`: it renders real
// subjects (DAVIS-2016 sequences with their first-frame masks) under a
// fixed set of prompts and references and measures what the look promises
// (light direction, night, the reference's colour, cast shadows, plate
// matching, the camera lock), writing a report and a contact sheet
// (docs/look.md). It is a benchmark, never imported by product code.
package look
