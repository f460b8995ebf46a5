package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A go test -json stream (cut from a real one): a passing package, a
// failing test with a passing sibling, a test killed by -timeout, a build
// failure, and a line from the go command itself.
const sample = `go: downloading example.com/x v1.0.0
{"Action":"start","Package":"p/a"}
{"Action":"run","Package":"p/a","Test":"TestPass"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"    a_test.go:5: quiet\n"}
{"Action":"output","Package":"p/a","Test":"TestPass","Output":"--- PASS: TestPass (1.50s)\n"}
{"Action":"pass","Package":"p/a","Test":"TestPass","Elapsed":1.5}
{"Action":"run","Package":"p/a","Test":"TestFail"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"    a_test.go:6: boom\n"}
{"Action":"output","Package":"p/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.25s)\n"}
{"Action":"fail","Package":"p/a","Test":"TestFail","Elapsed":0.25}
{"Action":"run","Package":"p/a","Test":"TestHang"}
{"Action":"output","Package":"p/a","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p/a","Test":"TestHang","Output":"panic: test timed out after 3s\n"}
{"Action":"output","Package":"p/a","Output":"FAIL\tp/a\t3.038s\n"}
{"Action":"fail","Package":"p/a","Elapsed":3.038}
{"Action":"start","Package":"p/b"}
{"Action":"run","Package":"p/b","Test":"TestB"}
{"Action":"output","Package":"p/b","Test":"TestB","Output":"--- PASS: TestB (7.00s)\n"}
{"Action":"pass","Package":"p/b","Test":"TestB","Elapsed":7}
{"Action":"run","Package":"p/b","Test":"TestB/sub"}
{"Action":"pass","Package":"p/b","Test":"TestB/sub","Elapsed":9}
{"Action":"output","Package":"p/b","Output":"PASS\n"}
{"Action":"output","Package":"p/b","Output":"ok  \tp/b\t7.1s\n"}
{"Action":"pass","Package":"p/b","Elapsed":7.1}
{"ImportPath":"p/c [p/c.test]","Action":"build-output","Output":"# p/c [p/c.test]\n"}
{"ImportPath":"p/c [p/c.test]","Action":"build-output","Output":"c/c_test.go:5:28: undefined: undefined\n"}
{"ImportPath":"p/c [p/c.test]","Action":"build-fail"}
{"Action":"output","Package":"p/c","Output":"FAIL\tp/c [build failed]\n"}
{"Action":"fail","Package":"p/c","Elapsed":0}
`

func TestStream(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	var out bytes.Buffer
	if err := stream([]string{"-o", file}, strings.NewReader(sample), &out); !errors.Is(err, errFailed) {
		t.Errorf("stream: %v, want errFailed", err)
	}
	want := `go: downloading example.com/x v1.0.0
    a_test.go:6: boom
--- FAIL: TestFail (0.25s)
panic: test timed out after 3s
FAIL	p/a	3.038s
PASS
ok  	p/b	7.1s
# p/c [p/c.test]
c/c_test.go:5:28: undefined: undefined
FAIL	p/c [build failed]
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != sample {
		t.Errorf("copy differs from the input (%v)", err)
	}
	passing := strings.Join(strings.Split(sample, "\n")[17:26], "\n") + "\n" // p/b only
	if err := stream(nil, strings.NewReader(passing), &out); err != nil {
		t.Errorf("a passing package: %v", err)
	}
	// Cut off after the hanging test's panic (go test killed): what the
	// package printed so far still shows.
	cut := strings.Join(strings.Split(sample, "\n")[:15], "\n") + "\n"
	out.Reset()
	stream(nil, strings.NewReader(cut), &out)
	if want := "go: downloading example.com/x v1.0.0\n    a_test.go:6: boom\n--- FAIL: TestFail (0.25s)\npanic: test timed out after 3s\n"; out.String() != want {
		t.Errorf("cut off: printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestReport(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	os.WriteFile(file, []byte(sample), 0o644)
	var out bytes.Buffer
	err := report([]string{"-top", "2", "-budget", "8m", "-elapsed", "5m", file}, &out)
	if !errors.Is(err, errFailed) {
		t.Errorf("report: %v, want errFailed (a test failed)", err)
	}
	for _, s := range []string{
		"(3 passed, 1 failed, 0 skipped, counting subtests)",
		"\n      7.00s  p/b  TestB\n      1.50s  p/a  TestPass\n\n", // top 2, no subtests
		"failed:\n  p/a TestFail\n  p/a\n  p/c [p/c.test] (build failed)\n  p/c\n",
		"time: 5m0s of the 8m0s budget",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, out.String())
		}
	}

	passing := filepath.Join(t.TempDir(), "pass.json")
	os.WriteFile(passing, []byte(strings.Join(strings.Split(sample, "\n")[17:26], "\n")), 0o644)
	out.Reset()
	if err := report([]string{"-budget", "8m", "-elapsed", "7m59s", passing}, &out); err != nil {
		t.Errorf("within the budget: %v\n%s", err, out.String())
	}
	out.Reset()
	err = report([]string{"-budget", "8m", "-elapsed", "8m1s", passing}, &out)
	if !errors.Is(err, errFailed) || !strings.Contains(out.String(), "FAIL: the run took 8m1s, over its budget of 8m0s") {
		t.Errorf("over the budget: %v\n%s", err, out.String())
	}
}
