package handoff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"streamd/internal/scripttest"

	"streamd/kvstate"
)

// TestScripts runs testdata/*: each file steps the channels of one or
// more changes through an interleaving, as their drivers would (run with
// -rewrite to regenerate the expected output after a deliberate change).
//
//	plan from=F to=T [balance]   a change; each input line "A -> B: g g …"
//	                             moves groups from channel A to B. Channels
//	                             below F start Before their marker, those
//	                             added are Join'ed. Later commands act on
//	                             the last plan, or on change=K (1-based).
//	mark c=N t=T                 channel N at its marker at clock T: its
//	                             handoffs go to the gainers' mailboxes;
//	                             its pause is open until hold or resume
//	hold c=N t=T                 channel N's operators hold what it gains
//	take c=N [from=L]            the next handoff in N's mailbox (or L's)
//	batch c=N t=T [need]         a batch while holding: Check, take all
//	                             that arrived, then go on — or, with need
//	                             and handoffs still out, Wait
//	resume c=N t=T               go on processing (after waiting)
//	joined c=N synced=S t=T      the added channel N settled at T
//	record c=N g=G               is a record of group G held now?
//	state                        every channel of the change
//
// After each command the channels it touched are printed: phase,
// handoffs left, mailbox, pause (ns) and what was held.
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T, path string) {
		var changes []*change
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "plan" {
				ch, err := newChange(d)
				if err != nil {
					return "error: " + err.Error()
				}
				changes = append(changes, ch)
				return ch.describePlan()
			}
			if len(changes) == 0 {
				d.Fatalf(t, "%s before any plan", d.Cmd)
			}
			k := len(changes)
			d.MaybeScanArgs(t, "change", &k)
			return changes[k-1].step(t, d)
		})
	})
}

// change is one change's channels and their mailboxes, as the runtime
// keeps them (a Go channel per gaining channel, FIFO).
type change struct {
	p    *Plan
	chs  []*Channel
	mail [][]Handoff
}

func newChange(d *datadriven.TestData) (*change, error) {
	var from, to int
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "from":
			from, _ = strconv.Atoi(a.Vals[0])
		case "to":
			to, _ = strconv.Atoi(a.Vals[0])
		}
	}
	var moves []kvstate.Move
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line == "" {
			continue
		}
		var a, b int
		head, groups, ok := strings.Cut(line, ":")
		if _, err := fmt.Sscanf(head, "%d -> %d", &a, &b); err != nil || !ok {
			return nil, fmt.Errorf("move %q: want \"A -> B: g g …\"", line)
		}
		for _, f := range strings.Fields(groups) {
			g, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("move %q: %v", line, err)
			}
			moves = append(moves, kvstate.Move{Group: g, From: a, To: b})
		}
	}
	p := NewPlan(moves, from, to, d.HasArg("balance"))
	ch := &change{p: p, mail: make([][]Handoff, max(from, to))}
	for c := range max(from, to) {
		if p.Added(c) {
			ch.chs = append(ch.chs, Join(p, c))
		} else {
			ch.chs = append(ch.chs, At(p, c))
		}
	}
	return ch, nil
}

func (ch *change) describePlan() string {
	var b strings.Builder
	for c := range ch.chs {
		fmt.Fprintf(&b, "c%d:", c)
		if ch.p.Added(c) {
			b.WriteString(" added;")
		}
		for _, l := range ch.p.Losses(c) {
			fmt.Fprintf(&b, " loses %v to c%d;", l.Groups, l.To)
		}
		if gs := ch.p.Gains(c); len(gs) > 0 {
			fmt.Fprintf(&b, " gains %v from %v;", gs, ch.p.Losers(c))
		}
		if ch.p.Retires(c) {
			b.WriteString(" retires;")
		}
		if !ch.p.Moves(c) && !ch.p.Added(c) && !ch.p.Retires(c) {
			b.WriteString(" keeps its groups;")
		}
		b.WriteString(fmt.Sprintf(" pause counts: %v\n", ch.chs[c].Counts()))
	}
	return b.String()
}

func (ch *change) step(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd == "state" {
		var b strings.Builder
		for c := range ch.chs {
			b.WriteString(ch.describe(c))
		}
		return b.String()
	}
	var c int
	d.ScanArgs(t, "c", &c)
	m := ch.chs[c]
	var out strings.Builder
	var now int64
	d.MaybeScanArgs(t, "t", &now)
	switch d.Cmd {
	case "mark":
		lose, adopt := m.Mark(now)
		for _, l := range lose {
			fmt.Fprintf(&out, "hands %v to c%d\n", l.Groups, l.To)
			ch.mail[l.To] = append(ch.mail[l.To], Handoff{From: c, Groups: l.Groups})
		}
		for _, h := range adopt {
			fmt.Fprintf(&out, "adopts %v from c%d (kept from before the marker)\n", h.Groups, h.From)
		}
	case "hold":
		if !m.CanHold() {
			return "cannot hold: " + m.Phase().String() + "\n"
		}
		m.Hold(now)
	case "take":
		i := 0
		if d.HasArg("from") {
			var from int
			d.ScanArgs(t, "from", &from)
			i = slices.IndexFunc(ch.mail[c], func(h Handoff) bool { return h.From == from })
		}
		if i < 0 || len(ch.mail[c]) == 0 {
			out.WriteString("mailbox empty: the driver blocks\n")
			break
		}
		h := ch.mail[c][i]
		ch.mail[c] = slices.Delete(ch.mail[c], i, i+1)
		ch.arrive(&out, c, h)
	case "batch":
		m.Check(now)
		for len(ch.mail[c]) > 0 && !m.Settled() {
			h := ch.mail[c][0]
			ch.mail[c] = ch.mail[c][1:]
			ch.arrive(&out, c, h)
		}
		switch {
		case m.Settled():
			out.WriteString("settled: the held records are applied in arrival order\n")
			m.Resume(now)
		case d.HasArg("need"):
			m.Wait()
			fmt.Fprintf(&out, "waits: %d handoff(s) out\n", m.Left())
		default:
			out.WriteString("goes on holding\n")
			m.Resume(now)
		}
	case "resume":
		m.Resume(now)
	case "joined":
		var synced int64
		d.ScanArgs(t, "synced", &synced)
		m.Joined(synced, now)
	case "record":
		var g int
		d.ScanArgs(t, "g", &g)
		if m.Held(g) {
			return fmt.Sprintf("group %d: held\n", g)
		}
		return fmt.Sprintf("group %d: processed\n", g)
	case "inject":
		// A handoff the plan does not send (tests of ErrHandoff).
		var from int
		d.ScanArgs(t, "from", &from)
		ch.arrive(&out, c, Handoff{From: from})
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	out.WriteString(ch.describe(c))
	return out.String()
}

// arrive is the driver of channel c taking h from its mailbox.
func (ch *change) arrive(out *strings.Builder, c int, h Handoff) {
	adopt, err := ch.chs[c].Arrive(h)
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return
	}
	if len(adopt) == 0 {
		fmt.Fprintf(out, "keeps %v from c%d until its marker\n", h.Groups, h.From)
	}
	for _, h := range adopt {
		fmt.Fprintf(out, "adopts %v from c%d\n", h.Groups, h.From)
	}
}

// describe is channel c's line.
func (ch *change) describe(c int) string {
	m := ch.chs[c]
	var b strings.Builder
	fmt.Fprintf(&b, "c%d: %s", c, m.Phase())
	if m.Left() > 0 {
		fmt.Fprintf(&b, ", %d left", m.Left())
	}
	if len(ch.mail[c]) > 0 {
		var from []int
		for _, h := range ch.mail[c] {
			from = append(from, h.From)
		}
		fmt.Fprintf(&b, ", mail from %v", from)
	}
	var held []int
	for _, g := range ch.p.Gains(c) {
		if m.Held(g) {
			held = append(held, g)
		}
	}
	if len(held) > 0 {
		fmt.Fprintf(&b, ", holds %v", held)
	}
	fmt.Fprintf(&b, ", pause %d", m.Pause())
	if m.Waited() {
		b.WriteString(", waited")
	}
	b.WriteString("\n")
	return b.String()
}
