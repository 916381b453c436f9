package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/matte"
)

// TestModelEvery: --model-every (VFX_MODEL_EVERY) sets the network's
// step for select and auto videos in worker, serve and render; 0 keeps
// the provider's default, 1 and matte.MaxEvery are taken, -1 and
// MaxEvery+1 are usage errors before any work.
func TestModelEvery(t *testing.T) {
	over := fmt.Sprint(matte.MaxEvery + 1)
	parsers := map[string]func(args []string, env map[string]string) (*modelOpts, error){
		"worker": func(args []string, env map[string]string) (*modelOpts, error) {
			cfg, err := parseWorkerFlags(args, io.Discard, envMap(env))
			return cfg.model, err
		},
		"serve": func(args []string, env map[string]string) (*modelOpts, error) {
			cfg, err := parseServeFlags(args, io.Discard, envMap(env))
			return cfg.model, err
		},
	}
	for name, parse := range parsers {
		for _, c := range []struct {
			args []string
			env  map[string]string
			want int
		}{
			{nil, nil, matte.DefaultCPUSchedule.Every},
			{[]string{"--model-every", "0"}, nil, matte.DefaultCPUSchedule.Every},
			{[]string{"--model-every", "1"}, nil, 1},
			{[]string{"--model-every", fmt.Sprint(matte.MaxEvery)}, nil, matte.MaxEvery},
			{nil, map[string]string{"VFX_MODEL_EVERY": "2"}, 2},
			{[]string{"--model-every", "3"}, map[string]string{"VFX_MODEL_EVERY": "2"}, 3},
			{[]string{"--model-every", "2", "--model-provider", "cuda"}, nil, 2},
			{[]string{"--model-provider", "cuda"}, nil, matte.DefaultGPUSchedule.Every},
		} {
			mo, err := parse(c.args, c.env)
			if err != nil {
				t.Errorf("%s %v %v: %v", name, c.args, c.env, err)
				continue
			}
			s := mo.schedule()
			// The flag sets both modes' step; without it each mode keeps
			// the provider's default.
			wantSel := c.want
			if mo.every == nil || *mo.every == 0 {
				def := matte.DefaultCPUSchedule
				if *mo.provider == "cuda" {
					def = matte.DefaultGPUSchedule
				}
				wantSel = def.ForSelect().Every
			}
			if s.Every != c.want || s.ForSelect().Every != wantSel {
				t.Errorf("%s %v %v: every %d (select %d), want %d (select %d)", name, c.args, c.env, s.Every, s.ForSelect().Every, c.want, wantSel)
			}
		}
		for _, c := range []struct {
			args []string
			env  map[string]string
			want string
		}{
			{[]string{"--model-every", "-1"}, nil, "--model-every -1: want 1.."},
			{[]string{"--model-every", over}, nil, "--model-every " + over + ": want 1.."},
			{nil, map[string]string{"VFX_MODEL_EVERY": over}, "--model-every " + over},
			{nil, map[string]string{"VFX_MODEL_EVERY": "often"}, "VFX_MODEL_EVERY"},
			{[]string{"--model-precision", "fp16"}, nil, `--model-precision "fp16": want int8 or fp32`},
			{nil, map[string]string{"VFX_MODEL_PRECISION": "int4"}, `--model-precision "int4"`},
		} {
			_, err := parse(c.args, c.env)
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue) {
				t.Errorf("%s %v %v: error %v, want a usage error mentioning %q", name, c.args, c.env, err, c.want)
			}
		}
	}

	// vfx render refuses it before reading the source (the file does
	// not exist, so any other order would fail differently) and writes
	// nothing.
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for _, v := range []string{"-1", over} {
		code, _, stderr := runCLI("render", "--source", filepath.Join(dir, "missing.mp4"), "--type", "video", "--alpha-mode", "auto",
			"--prompt", "night", "--out", out, "--model-every", v)
		if code != 2 || !strings.Contains(stderr, "--model-every "+v+": want 1..") {
			t.Errorf("render --model-every %s: exit %d, stderr %q: want a usage error", v, code, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written by a refused render", out)
	}
}

// TestPrintModelPrecision: vfx version says in which arithmetic the
// network runs: 8 bits on the CPU for the built-in card, fp32 when
// VFX_MODEL_PRECISION says so.
func TestPrintModelPrecision(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "segmentation arithmetic: 8-bit on cpu ("},
		{map[string]string{"VFX_MODEL_PRECISION": "fp32"}, "segmentation arithmetic: fp32 on cpu (VFX_MODEL_PRECISION=fp32)"},
	} {
		var b strings.Builder
		printModel(&b, envMap(c.env))
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("env %v: %q, want a line with %q", c.env, b.String(), c.want)
		}
	}
}
