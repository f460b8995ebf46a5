// Package deps lists what a package of this module imports, directly or
// through other packages of the module, for tests that keep a package
// apart from another (the job description and its loader from the
// runtime). It reads the source files (go/build: build constraints, no
// test files) and runs no go command.
package deps

import (
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Of returns the import paths the package in dir depends on, sorted: every
// package it imports, and what the module's packages among them import in
// turn (packages outside the module are listed, not followed).
func Of(dir string) ([]string, error) {
	root, module, err := moduleRoot(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var walk func(dir string) error
	walk = func(dir string) error {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			return fmt.Errorf("deps: %s: %w", dir, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				if err := walk(filepath.Join(root, filepath.FromSlash(rest))); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	var out []string
	for imp := range seen {
		out = append(out, imp)
	}
	slices.Sort(out)
	return out, nil
}

// moduleRoot finds the go.mod at or above dir: its directory and the
// module's path.
func moduleRoot(dir string) (root, module string, err error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return d, strings.TrimSpace(m), nil
				}
			}
			return "", "", fmt.Errorf("deps: %s/go.mod names no module", d)
		}
		up := filepath.Dir(d)
		if up == d {
			return "", "", fmt.Errorf("deps: no go.mod at or above %s", dir)
		}
		d = up
	}
}
