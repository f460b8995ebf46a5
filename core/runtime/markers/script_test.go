package markers

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"streamd/internal/scripttest"
)

// TestScripts runs testdata/*: each file steps the merger's markers
// through an interleaving of its channels, as the merger's loop would
// (run with -rewrite to regenerate the expected output after a
// deliberate change).
//
//	channels n=N                     a merger of N channels, at the start
//	read c=C KIND seq=S [e=E] [to=T] marker KIND (pass, barrier, end,
//	                                 change) read from channel C's ring
//	aligned seq=S                    the merger released marker S: what
//	                                 it asks, and the channels after it
//	closed c=C                       channel C's ring is closed and empty:
//	                                 its end, or a failure upstream
//	state                            every channel: markers pending, ended
//
// A read prints "ok" (and "cC ended" when it ends the channel) or the
// error; an error leaves the state as it was.
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T, path string) {
		var a *Aligner
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "channels" {
				var n int
				d.ScanArgs(t, "n", &n)
				a = New(n)
				return a.state()
			}
			if a == nil {
				d.Fatalf(t, "%s before channels", d.Cmd)
			}
			switch d.Cmd {
			case "read":
				var c int
				d.ScanArgs(t, "c", &c)
				m := marker(t, d)
				if err := a.Read(c, m); err != nil {
					return "error: " + err.Error()
				}
				if a.Ended(c) {
					return fmt.Sprintf("ok\nc%d ended", c)
				}
				return "ok"
			case "aligned":
				var seq uint64
				d.ScanArgs(t, "seq", &seq)
				m, err := a.Aligned(seq)
				if err != nil {
					return "error: " + err.Error()
				}
				s := "aligned " + m.String()
				switch m.Kind {
				case Barrier:
					s += fmt.Sprintf(": hand on, checkpoint %d's output ends here", m.Epoch)
				case End:
					s += ": hand on, the stage is done"
				case Change:
					s += fmt.Sprintf(": switch to %d channels", a.Channels())
				case Pass:
					s += ": hand on"
				}
				return s + "\n" + a.state()
			case "closed":
				var c int
				d.ScanArgs(t, "c", &c)
				if a.Ended(c) {
					return "its end"
				}
				return "failure: a stage before stopped"
			case "state":
				return a.state()
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// marker is the marker a read names: its kind (the first argument after
// c) and seq, e, to.
func marker(t *testing.T, d *datadriven.TestData) Marker {
	var m Marker
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "pass":
			m.Kind = Pass
		case "barrier":
			m.Kind = Barrier
		case "end":
			m.Kind = End
		case "change":
			m.Kind = Change
		}
	}
	if m.Kind == 0 {
		d.Fatalf(t, "read: no kind")
	}
	d.ScanArgs(t, "seq", &m.Seq)
	if d.HasArg("e") {
		d.ScanArgs(t, "e", &m.Epoch)
	}
	if d.HasArg("to") {
		d.ScanArgs(t, "to", &m.To)
	}
	return m
}

// state prints every channel: its pending markers and whether it ended,
// and Done.
func (a *Aligner) state() string {
	var b strings.Builder
	for c := range a.ch {
		ch := &a.ch[c]
		fmt.Fprintf(&b, "c%d:", c)
		if len(ch.q) == 0 {
			b.WriteString(" nothing pending")
		}
		for i, m := range ch.q {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %v", m)
		}
		if ch.ended {
			b.WriteString("; ended")
		}
		b.WriteByte('\n')
	}
	if a.done {
		b.WriteString("done\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// TestErrorsKeepState: a refused read or release changes nothing.
func TestErrorsKeepState(t *testing.T) {
	a := New(2)
	if err := a.Read(0, Marker{Kind: Barrier, Seq: 10, Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	before := a.state()
	for _, err := range []error{
		a.Read(0, Marker{Kind: Pass, Seq: 9}),
		a.Read(0, Marker{Kind: Barrier, Seq: 11, Epoch: 2}),
		func() error { _, err := a.Aligned(10); return err }(),
	} {
		if err == nil {
			t.Fatal("no error")
		}
		if !errors.Is(err, ErrOrder) && !errors.Is(err, ErrNotAligned) {
			t.Fatalf("error %v", err)
		}
		if s := a.state(); s != before {
			t.Fatalf("state after %v:\n%s\nwant\n%s", err, s, before)
		}
	}
}
