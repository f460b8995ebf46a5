package align

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata expectations")

// TestScripts runs testdata/*.txt. The first line is "inputs N"; then
// commands, each followed by what it decides (indented "> "; nothing when
// it decides nothing):
//
//	data in=0 t=5        data on input 0, largest event time 5 (t omitted: none)
//	                     > late                      at or below the output watermark
//	watermark in=0 t=10  input 0's watermark
//	barrier in=1 e=2     barrier 2 on input 1
//	                     > held 1                    input 1 is held
//	                     > complete 2                every live input delivered it
//	end in=2             input 2 ended             > complete 2, when that aligns it
//	idle in=0            the driver's clock says input 0 is idle
//	next                 > read 1                    the input to read (arrival order)
//	state                > 0: wm=10 held idle ended behind (what applies)
//
// After every command the output watermark is asked for, as a driver does
// after each event; "> watermark W" when it rose. An error prints
// "> error: …" and leaves the state as it was. Every script also checks
// that the output watermark never goes back and that a complete epoch is
// reported once. Lines starting with # are comments.
//
// Run with -rewrite to regenerate the expectations after a deliberate
// change.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var a *Inputs
	last := int64(NoTime)
	completed := map[int64]bool{}
	complete := func(e int64) {
		if completed[e] {
			t.Fatalf("%s: epoch %d complete twice", file, e)
		}
		completed[e] = true
		fmt.Fprintf(&out, "> complete %d\n", e)
	}
	for n, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "> ") {
			continue // expected output: regenerated below
		}
		out.WriteString(line + "\n")
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		args := map[string]int64{}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue // a positional argument (inputs N)
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s:%d: %q: %v", file, n+1, kv, err)
			}
			args[k] = x
		}
		if a == nil && f[0] != "inputs" {
			t.Fatalf("%s:%d: the script starts with inputs N", file, n+1)
		}
		in := int(args["in"])
		var err error
		switch f[0] {
		case "inputs":
			a = New(int(mustArg(t, file, n, f, 1)))
		case "data":
			tm, ok := args["t"]
			if !ok {
				tm = NoTime
			}
			var late bool
			if late, err = a.Data(in, tm); late {
				out.WriteString("> late\n")
			}
		case "watermark":
			err = a.Watermark(in, args["t"])
		case "barrier":
			var done bool
			if done, err = a.Barrier(in, args["e"]); done {
				complete(args["e"])
			} else if err == nil {
				fmt.Fprintf(&out, "> held %d\n", in)
			}
		case "end":
			var e int64
			if e, err = a.End(in); e != 0 {
				complete(e)
			}
		case "idle":
			a.Idle(in)
		case "next":
			if i, ok := a.Next(); ok {
				fmt.Fprintf(&out, "> read %d\n", i)
			} else {
				out.WriteString("> none\n")
			}
		case "state":
			for i := range a.Len() {
				fmt.Fprintf(&out, "> %d:%s\n", i, a.describe(i))
			}
		default:
			t.Fatalf("%s:%d: unknown command %q", file, n+1, f[0])
		}
		if err != nil {
			fmt.Fprintf(&out, "> error: %v\n", err)
		}
		if wm, ok := a.Output(); ok && wm != last {
			if wm < last {
				t.Fatalf("%s:%d: the output watermark went back from %d to %d", file, n+1, last, wm)
			}
			last = wm
			fmt.Fprintf(&out, "> watermark %d\n", wm)
		}
	}
	if *rewrite {
		os.WriteFile(file, []byte(out.String()), 0o644)
		return
	}
	if got := out.String(); got != string(data) {
		t.Errorf("%s: output differs (rerun with -rewrite to see and accept):\n%s", file, got)
	}
}

func mustArg(t *testing.T, file string, n int, f []string, k int) int64 {
	if len(f) <= k {
		t.Fatalf("%s:%d: %s wants an argument", file, n+1, f[0])
	}
	x, err := strconv.ParseInt(f[k], 10, 64)
	if err != nil {
		t.Fatalf("%s:%d: %v", file, n+1, err)
	}
	return x
}

// describe is input i's state as the scripts print it.
func (a *Inputs) describe(i int) string {
	in := &a.in[i]
	var b strings.Builder
	if in.wm == NoTime {
		b.WriteString(" wm=none")
	} else {
		fmt.Fprintf(&b, " wm=%d", in.wm)
	}
	for _, s := range []struct {
		on   bool
		name string
	}{{in.held, "held"}, {in.idle, "idle"}, {in.ended, "ended"}, {in.behind, "behind"}} {
		if s.on {
			b.WriteString(" " + s.name)
		}
	}
	return b.String()
}
