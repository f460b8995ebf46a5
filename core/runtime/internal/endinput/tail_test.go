package endinput

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"streamd/internal/scripttest"
)

// TestScripts runs testdata/*.txt (cockroachdb/datadriven; -rewrite
// regenerates the expectations after a deliberate change). Directives:
//
//	new room=N        a fresh Tail whose tail holds at most N barriers
//	run               steps, one per input line, each decision beneath:
//	                    c1 n=2 hold due   channel 1 steps; the newest
//	                                      routing has 2 channels, the
//	                                      rings hold batches (hold) and a
//	                                      checkpoint is due (due)
//	state             the barriers placed, closed, each channel at the
//	                  end with the barriers it delivered
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T, path string) {
		var tl *Tail
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "new":
				var room int
				d.ScanArgs(t, "room", &room)
				tl = New(room)
				return tl.String()
			case "run":
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					c, f, err := parseStep(line)
					if err != nil {
						d.Fatalf(t, "%s: %v", line, err)
					}
					fmt.Fprintf(&out, "c%d: %s\n", c, tl.Step(c, f))
				}
				return out.String()
			case "state":
				return tl.String()
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// parseStep reads a step line: "c<channel> n=<channels> [hold] [due]".
func parseStep(line string) (int, Facts, error) {
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil {
		return 0, Facts{}, err
	}
	c, err := strconv.Atoi(strings.TrimPrefix(cmd, "c"))
	if err != nil || !strings.HasPrefix(cmd, "c") {
		return 0, Facts{}, fmt.Errorf("want c<channel>, got %q", cmd)
	}
	var f Facts
	for _, a := range args {
		switch {
		case a.Key == "n" && len(a.Vals) == 1:
			if f.Channels, err = strconv.Atoi(a.Vals[0]); err != nil {
				return 0, Facts{}, err
			}
		case a.Key == "hold" && len(a.Vals) == 0:
			f.RingsHold = true
		case a.Key == "due" && len(a.Vals) == 0:
			f.Due = true
		default:
			return 0, Facts{}, fmt.Errorf("unknown argument %s", a)
		}
	}
	if f.Channels == 0 {
		return 0, Facts{}, fmt.Errorf("no n=<channels>")
	}
	return c, f, nil
}

func (d Decision) String() string {
	if d.Action == Deliver || d.Action == Place {
		return fmt.Sprintf("%s %d", d.Action, d.Barrier)
	}
	return d.Action.String()
}
