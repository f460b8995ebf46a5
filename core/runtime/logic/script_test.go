package logic

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
//	log [floor=B] [restored=f,g]  a fresh Log (a restored run's records)
//	check name=f old-state=S old-partial old-retune old-shape=X new-state=S new-shape=Y
//	                             Check's decision, or why it refuses
//	place name=f stage=region index=I seq=S [block=B] [pos=P]
//	                             an update placed at that sync point
//	follow name=c0 stage=region  a stage started now (Follow)
//	meet name=c0 epoch=E         stage c0 at update E's marker (an epoch
//	                             not placed is a marker from nowhere)
//	due name=w0 block=B          source worker w0 starting block B: the
//	                             updates it meets, and what it does
//	at block=B                   the update whose marker goes before B
//	barrier block=B              a barrier requested in block B: the block
//	                             it goes in (Floor) and what it records
//	end                          the input has ended
//	state                        epoch, floor, ended, records
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T, path string) {
		l := &Log{}
		fs := map[string]*Follower{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "log":
				floor := 0
				if d.HasArg("floor") {
					d.ScanArgs(t, "floor", &floor)
				}
				var recs []Record
				if d.HasArg("restored") {
					var names string
					d.ScanArgs(t, "restored", &names)
					for _, n := range strings.Split(names, ",") {
						recs = append(recs, Record{Operator: n, Body: n + "'"})
					}
				}
				l, fs = NewLog(recs, floor), map[string]*Follower{}
				return state(l)
			case "check":
				var name string
				d.ScanArgs(t, "name", &name)
				old := Def{State: arg(t, d, "old-state"), Partial: d.HasArg("old-partial"), Retune: d.HasArg("old-retune"), Shape: arg(t, d, "old-shape")}
				next := Def{State: arg(t, d, "new-state"), Shape: arg(t, d, "new-shape")}
				old.Out, next.Out = "("+old.Shape+")", "("+next.Shape+")"
				m, err := Check(name, old, next)
				if err != nil {
					return "refused: " + err.Error()
				}
				return m.String()
			case "place":
				var name string
				var index int
				var seq uint64
				d.ScanArgs(t, "name", &name)
				d.ScanArgs(t, "index", &index)
				d.ScanArgs(t, "seq", &seq)
				at := Point{Seq: seq, Block: -1, Position: -1}
				if d.HasArg("block") {
					d.ScanArgs(t, "block", &at.Block)
				}
				if d.HasArg("pos") {
					d.ScanArgs(t, "pos", &at.Position)
				}
				u, err := l.Place(Op{Name: name, Stage: stage(t, d), Index: index}, name+"'", at)
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("placed %s", show(u))
			case "follow":
				f := l.Follow(stage(t, d))
				fs[arg(t, d, "name")] = &f
				return fmt.Sprintf("%s at epoch %d", f.Stage(), f.Epoch())
			case "meet":
				name := arg(t, d, "name")
				f := fs[name]
				if f == nil {
					d.Fatalf(t, "no follower %s", name)
				}
				var e uint64
				d.ScanArgs(t, "epoch", &e)
				u := Update{Epoch: e, Op: Op{Name: "?"}}
				if e >= 1 && e <= uint64(len(l.placed)) {
					u = l.placed[e-1]
				}
				return meet(f, u)
			case "due":
				name := arg(t, d, "name")
				f := fs[name]
				if f == nil {
					d.Fatalf(t, "no follower %s", name)
				}
				var b int
				d.ScanArgs(t, "block", &b)
				var out strings.Builder
				for _, u := range l.Due(nil, f, b) {
					fmt.Fprintf(&out, "%s: %s\n", show(u), meet(f, u))
				}
				fmt.Fprintf(&out, "%s at epoch %d", name, f.Epoch())
				return out.String()
			case "at":
				var b int
				d.ScanArgs(t, "block", &b)
				if u, ok := l.At(b); ok {
					return show(u)
				}
				return "none"
			case "barrier":
				// exchange.barrierBlock: the smallest block being read at
				// or after the floor; the barrier records the updates.
				var b int
				d.ScanArgs(t, "block", &b)
				s := fmt.Sprintf("barrier in block %d records", max(b, l.Floor()))
				for _, r := range l.Records() {
					s += " " + r.Operator
				}
				return s
			case "end":
				l.End()
				return state(l)
			case "state":
				return state(l)
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// arg is a string argument, "" when absent.
func arg(t *testing.T, d *datadriven.TestData, key string) string {
	var s string
	if d.HasArg(key) {
		d.ScanArgs(t, key, &s)
	}
	return s
}

func stage(t *testing.T, d *datadriven.TestData) Stage {
	s := arg(t, d, "stage")
	for i, n := range stageNames {
		if n == s {
			return Stage(i)
		}
	}
	d.Fatalf(t, "unknown stage %q", s)
	return 0
}

func meet(f *Follower, u Update) string {
	swap, err := f.Meet(u)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case swap:
		return "swap"
	}
	return "pass"
}

func show(u Update) string {
	s := fmt.Sprintf("update %d %s %s[%d] seq=%d", u.Epoch, u.Name, u.Stage, u.Index, u.Seq)
	if u.Block >= 0 {
		s += fmt.Sprintf(" block=%d", u.Block)
	}
	if u.Position >= 0 {
		s += fmt.Sprintf(" pos=%d", u.Position)
	}
	return s
}

func state(l *Log) string {
	s := fmt.Sprintf("epoch %d floor %d", l.Epoch(), l.Floor())
	if l.Ended() {
		s += " ended"
	}
	for _, r := range l.Records() {
		s += fmt.Sprintf(" %s=%s", r.Operator, r.Body)
	}
	return s
}
