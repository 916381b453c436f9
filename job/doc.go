// Package job is the contract between the API and the workers: what a job
// is on the wire and in a job record. It holds the request types and their
// decoding, the output names, the product and model ids, the alpha and
// product modes, the limits, the field rules (Validate), the rules a matte
// must meet against its source, and the typed error code a rejected input
// carries.
//
// It is pure Go: no cgo, no FFmpeg, no pixels. The checks that need to
// read media live in package media; the pipeline lives in package worker.
package job
