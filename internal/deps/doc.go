// Package deps holds no code: its test checks the import rules between the
// packages of this module (deps_test.go, after Go's own
// go/build/deps_test.go).
package deps
