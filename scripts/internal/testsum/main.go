// Command testsum reads `go test -json` for scripts/test.sh and
// scripts/test-long.sh: it prints what plain `go test` would (package
// lines, failed tests' output) and, at the end, the slowest tests and the
// run's time against its budget. It needs nothing beyond the Go toolchain
// (CI machines may lack jq and python).
//
//	go test -json ./... 2>&1 | testsum stream -o run.json
//	testsum report [-top 10] [-budget 8m -elapsed 312s] run.json…
//
// stream copies its input to -o (appending) and writes to stdout, as plain
// go test does, each package's lines ("ok", "FAIL", "PASS", "?", panics)
// with the output of its failed tests (their log lines and "--- FAIL";
// a passing test's output is dropped) when the package ends, and build
// errors and lines that are not JSON at once. When a package fails, the
// output of its tests that neither passed nor failed (a test killed by
// -timeout) is printed too. It exits 1 if a test, a package or a build
// failed.
//
// report reads the JSON files and prints the -top slowest top-level tests
// (time, package, test), the failed tests, and the elapsed time against
// -budget; it exits 1 if a test failed or the elapsed time (given by the
// script, which knows when it started) exceeds the budget.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail events
	Test       string
	Elapsed    float64 // seconds
	Output     string
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "stream":
		err = stream(os.Args[2:], os.Stdin, os.Stdout)
	case "report":
		err = report(os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		if err != errFailed { // what failed is printed already
			fmt.Fprintln(os.Stderr, "testsum:", err)
		}
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testsum stream -o FILE < go-test-json\n       testsum report [-top N] [-budget D -elapsed D] FILE...")
	os.Exit(2)
}

// errFailed is stream's and report's error when tests failed; the details
// are already printed.
var errFailed = fmt.Errorf("tests failed")

type testKey struct{ pkg, test string }

func stream(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("stream", flag.ExitOnError)
	file := fs.String("o", "", "append the JSON input to this file")
	fs.Parse(args)
	var copyTo io.Writer = io.Discard
	if *file != "" {
		f, err := os.OpenFile(*file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		copyTo = bw
	}
	failed := false
	tests := map[testKey][]string{}       // output of tests still running
	pkgs := map[string]*strings.Builder{} // what a package prints when it ends
	pkgOut := func(pkg string) *strings.Builder {
		if pkgs[pkg] == nil {
			pkgs[pkg] = &strings.Builder{}
		}
		return pkgs[pkg]
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(copyTo, line)
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(out, line) // the go command's own messages
			continue
		}
		k := testKey{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test != "" {
				tests[k] = append(tests[k], e.Output)
				break
			}
			if strings.HasPrefix(e.Output, "FAIL") {
				flushTests(pkgOut(e.Package), tests, e.Package)
			}
			pkgOut(e.Package).WriteString(e.Output)
		case "pass", "skip", "fail":
			if e.Action == "fail" {
				failed = true
			}
			if e.Test != "" {
				if e.Action == "fail" {
					printTest(pkgOut(e.Package), tests[k])
				}
				delete(tests, k)
				break
			}
			if e.Action == "fail" {
				flushTests(pkgOut(e.Package), tests, e.Package)
			}
			fmt.Fprint(out, pkgOut(e.Package).String())
			delete(pkgs, e.Package)
		}
	}
	// Packages cut off (go test killed): what they printed so far.
	for k := range tests {
		pkgOut(k.pkg)
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		flushTests(pkgs[p], tests, p)
		fmt.Fprint(out, pkgs[p].String())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed {
		return errFailed
	}
	return nil
}

// flushTests writes the output of package pkg's tests that never ended (a
// -timeout panic, a crash), by name, when the package fails.
func flushTests(out io.Writer, tests map[testKey][]string, pkg string) {
	for _, k := range sortedKeys(tests) {
		if k.pkg == pkg {
			printTest(out, tests[k])
			delete(tests, k)
		}
	}
}

func sortedKeys(tests map[testKey][]string) []testKey {
	keys := make([]testKey, 0, len(tests))
	for k := range tests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].pkg < keys[j].pkg || keys[i].pkg == keys[j].pkg && keys[i].test < keys[j].test
	})
	return keys
}

// printTest prints a test's output without the "=== RUN"-style progress
// lines that -json's verbose mode adds.
func printTest(out io.Writer, lines []string) {
	for _, l := range lines {
		if !strings.HasPrefix(l, "=== ") {
			fmt.Fprint(out, l)
		}
	}
}

type result struct {
	pkg, test string
	elapsed   time.Duration
	action    string
}

func report(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	top := fs.Int("top", 10, "how many of the slowest tests to list")
	budget := fs.Duration("budget", 0, "the run's time budget (0: none)")
	elapsed := fs.Duration("elapsed", 0, "the run's time so far")
	fs.Parse(args)
	var tests []result
	var failed []string
	counts := map[string]int{}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			switch e.Action {
			case "pass", "fail", "skip":
			case "build-fail":
				failed = append(failed, e.ImportPath+" (build failed)")
				continue
			default:
				continue
			}
			if e.Test == "" {
				if e.Action == "fail" {
					failed = append(failed, e.Package)
				}
				continue
			}
			counts[e.Action]++
			if e.Action == "fail" {
				failed = append(failed, e.Package+" "+e.Test)
			}
			if !strings.Contains(e.Test, "/") && e.Action != "skip" {
				tests = append(tests, result{e.Package, e.Test, time.Duration(e.Elapsed * float64(time.Second)), e.Action})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	sort.SliceStable(tests, func(i, j int) bool { return tests[i].elapsed > tests[j].elapsed })
	fmt.Fprintf(out, "\nslowest tests (%d passed, %d failed, %d skipped, counting subtests):\n", counts["pass"], counts["fail"], counts["skip"])
	w := 0
	for _, r := range tests[:min(*top, len(tests))] {
		w = max(w, len(r.pkg))
	}
	for _, r := range tests[:min(*top, len(tests))] {
		mark := ""
		if r.action == "fail" {
			mark = "  FAIL"
		}
		fmt.Fprintf(out, "  %8.2fs  %-*s  %s%s\n", r.elapsed.Seconds(), w, r.pkg, r.test, mark)
	}
	if len(failed) > 0 {
		fmt.Fprintf(out, "\nfailed:\n")
		for _, f := range failed {
			fmt.Fprintf(out, "  %s\n", f)
		}
	}
	over := *budget > 0 && *elapsed > *budget
	switch {
	case over:
		fmt.Fprintf(out, "\nFAIL: the run took %s, over its budget of %s: make the slowest tests above smaller in the fast tier (internal/tier) or move them to scripts/test-long.sh; STREAMD_TEST_BUDGET overrides the budget\n", *elapsed, *budget)
	case *budget > 0:
		fmt.Fprintf(out, "\ntime: %s of the %s budget\n", *elapsed, *budget)
	case *elapsed > 0:
		fmt.Fprintf(out, "\ntime: %s\n", *elapsed)
	}
	if over || len(failed) > 0 {
		return errFailed
	}
	return nil
}
