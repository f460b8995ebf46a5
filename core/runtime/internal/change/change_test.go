package change

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"streamd/internal/scripttest"
)

// TestScripts runs testdata/*.txt (cockroachdb/datadriven; -rewrite
// regenerates the expectations after a deliberate change). Directives:
//
//	new from=N to=M [balance]   a fresh Source: a change from N to M
//	                            channels (balance: a rebalance step)
//	run                         steps, one per input line ("step", or
//	                            "step busy": an old channel is busy),
//	                            each decision beneath
//	state                       the phase and the next channel
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T, path string) {
		var s *Source
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "new":
				var from, to int
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "to", &to)
				s = New(from, to, d.HasArg("balance"))
				return s.String()
			case "run":
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					switch strings.TrimSpace(line) {
					case "step":
						fmt.Fprintln(&out, s.Step(Facts{}))
					case "step busy":
						fmt.Fprintln(&out, s.Step(Facts{Busy: true}))
					default:
						d.Fatalf(t, "want step or step busy, got %q", line)
					}
				}
				return out.String()
			case "state":
				return s.String()
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// TestOrder steps every change from 1..5 to 1..5 channels, and every
// rebalance step, with old channels busy for 0..3 steps of the drain, and
// checks the promises: prepare first; every old channel pulsed, then
// waits only while busy, for a change of the count (none for a rebalance
// step); every old channel marked once, before the switch; each removed
// channel's ring closed once, after its marker and before the switch;
// then done for good.
func TestOrder(t *testing.T) {
	for from := 1; from <= 5; from++ {
		for to := 1; to <= 5; to++ {
			for _, balance := range []bool{false, true} {
				if balance && from != to {
					continue
				}
				for busy := range 4 {
					name := fmt.Sprintf("%d→%d balance=%v busy=%d", from, to, balance, busy)
					s := New(from, to, balance)
					var got []Decision
					for step := 0; step < 100; step++ {
						f := Facts{Busy: s.Draining() && busy > 0}
						if s.Draining() && busy > 0 {
							busy--
						}
						d := s.Step(f)
						got = append(got, d)
						if d.Action == Done {
							break
						}
					}
					checkOrder(t, name, from, to, balance, got)
				}
			}
		}
	}
}

func checkOrder(t *testing.T, name string, from, to int, balance bool, ds []Decision) {
	t.Helper()
	if len(ds) == 0 || ds[0].Action != Prepare {
		t.Fatalf("%s: %v: prepare is not first", name, ds)
	}
	pulsed, marked, closed := map[int]bool{}, map[int]bool{}, map[int]bool{}
	switched := false
	for _, d := range ds[1:] {
		if switched && d.Action != Done {
			t.Fatalf("%s: %v: %v after the switch", name, ds, d)
		}
		switch d.Action {
		case Prepare:
			t.Fatalf("%s: %v: prepare twice", name, ds)
		case Pulse:
			if balance || len(marked) > 0 || pulsed[d.Channel] || d.Channel >= from {
				t.Fatalf("%s: %v: %v", name, ds, d)
			}
			pulsed[d.Channel] = true
		case Wait:
			if balance || len(pulsed) != from || len(marked) > 0 {
				t.Fatalf("%s: %v: wait outside the drain", name, ds)
			}
		case Mark:
			if marked[d.Channel] || d.Channel >= from || !balance && len(pulsed) != from {
				t.Fatalf("%s: %v: %v", name, ds, d)
			}
			marked[d.Channel] = true
		case Close:
			if d.Channel < to || d.Channel >= from || !marked[d.Channel] || closed[d.Channel] {
				t.Fatalf("%s: %v: %v", name, ds, d)
			}
			closed[d.Channel] = true
		case Switch:
			if len(marked) != from || len(closed) != max(0, from-to) {
				t.Fatalf("%s: %v: switch with %d marked, %d closed", name, ds, len(marked), len(closed))
			}
			switched = true
		}
	}
	if !switched || ds[len(ds)-1].Action != Done {
		t.Fatalf("%s: %v: not switched and done", name, ds)
	}
}
