package window

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"streamd/core"
	"streamd/kvstate"
)

// oddFails is a count_if predicate that fails on v = 13 (an error that
// add reports after adding the record's other aggregates) and counts v >
// 15.
type oddFails struct{}

func (oddFails) EvalBool(row []core.Value) (bool, error) {
	if row[1].Int() == 13 {
		return false, errors.New("13")
	}
	return row[1].Int() > 15, nil
}

// step is one item of a scripted stream: a record (key k, event time t
// in s, value v) or, with wm set, a watermark at t s.
type step struct {
	wm      bool
	k, t, v int64
}

// holdStream makes n items over 24 keys, event time mostly increasing
// (one record in 15 is up to 30 s early: late or partly late), a
// watermark after every 5 records at the largest time seen less 2 s.
func holdStream(n int, seed uint64) []step {
	rnd := rand.New(rand.NewPCG(seed, 3))
	var out []step
	t, top := int64(0), int64(0)
	for i := range n {
		t += rnd.Int64N(3)
		ts := t
		if rnd.IntN(15) == 0 {
			ts -= rnd.Int64N(30)
		}
		top = max(top, ts)
		out = append(out, step{k: rnd.Int64N(24), t: ts, v: rnd.Int64N(20)})
		if i%5 == 4 {
			out = append(out, step{wm: true, t: top - 2})
		}
	}
	return out
}

// holdKey is key k's field value.
func holdKey(k int64) core.Value { return core.StringValue("k" + strconv.FormatInt(k, 10)) }

// holdItem is one item fed to the window instances: a watermark (wm, at
// t s) or one record, of the input's schema or, with a local step, of
// its wide schema (in, a batch of one record built for the instance's
// definition by make).
type holdItem struct {
	wm   bool
	t    int64
	h    uint64
	rows []core.Value // the record's fields
	time int64        // its event time, ns
	pos  int64
}

// holdItems turns a stream into items: without a local step one per
// record; with one, each run of records between two watermarks is one
// batch through a local step instance of def, and its output records
// (raw and partials) are the items.
func holdItems(t *testing.T, stream []step, def core.OperatorDef) []holdItem {
	t.Helper()
	var items []holdItem
	var local core.Operator
	var out *core.Emitter
	if def.Local != nil {
		var err error
		if local, err = def.Local.New(core.Env{Channels: 1}); err != nil {
			t.Fatal(err)
		}
		out = core.NewEmitter(def.Local.Out, func(b *core.Batch) error {
			for i := range b.Len {
				row := append([]core.Value(nil), b.Row(i)...)
				h := core.HashKey(row, []int{0}, []core.Type{core.String}) // as the splitter does
				items = append(items, holdItem{h: h, rows: row, time: b.Time[i], pos: b.Pos[i]})
			}
			b.Release()
			return nil
		}, nil)
	}
	var run *core.Batch
	flush := func() {
		if run == nil {
			return
		}
		if err := local.Process(run, out); err != nil {
			t.Fatal(err)
		}
		if err := out.Flush(); err != nil {
			t.Fatal(err)
		}
		run.Release()
		run = nil
	}
	for i, s := range stream {
		if s.wm {
			flush()
			items = append(items, holdItem{wm: true, t: s.t})
			continue
		}
		row := []core.Value{holdKey(s.k), core.IntValue(s.v)}
		h := core.HashKey(row, []int{0}, []core.Type{core.String})
		if local == nil {
			items = append(items, holdItem{h: h, rows: row, time: s.t * 1e9, pos: int64(i + 1)})
			continue
		}
		if run == nil {
			run = core.NewBatch(scriptSchema)
		}
		copy(run.Append(uint64(i+1), h, s.t*1e9, int64(i+1)), row)
	}
	flush()
	return items
}

// holdRig is one instance of a window and what it emitted.
type holdRig struct {
	op   *windowOp
	in   *core.Schema // the schema of the records fed
	out  *core.Emitter
	rows *[]string
}

func newHoldRig(t *testing.T, def core.OperatorDef, errs *core.ErrorPolicy, rows *[]string) holdRig {
	t.Helper()
	op, err := def.New(core.Env{Channels: 2, Errors: errs})
	if err != nil {
		t.Fatal(err)
	}
	em := core.NewEmitter(def.Out, func(b *core.Batch) error {
		for i := range b.Len {
			r := b.Row(i)
			s := fmt.Sprintf("seq=%d %d %d %s", b.Seq[i], r[0].Time()/1e9, r[1].Time()/1e9, r[2].Str())
			for _, v := range r[3:] {
				s += " " + strconv.FormatInt(v.Int(), 10)
			}
			*rows = append(*rows, s)
		}
		b.Release()
		return nil
	}, nil)
	in := scriptSchema
	if def.Local != nil {
		in = def.Local.Out
	}
	return holdRig{op: op.(*windowOp), in: in, out: em, rows: rows}
}

// feed gives item i (sequence number i+1) to the rig.
func (r holdRig) feed(t *testing.T, it holdItem, i int) {
	t.Helper()
	var err error
	if it.wm {
		err = r.op.Watermark(it.t*1e9-1, uint64(i+1), r.out)
	} else {
		b := core.NewBatch(r.in)
		copy(b.Append(uint64(i+1), it.h, it.time, it.pos), it.rows)
		err = r.op.Process(b, r.out)
		b.Release()
	}
	if err == nil {
		err = r.out.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The handoff, scripted: key groups move from channel A to channel B at
// a marker. B reaches the marker first and holds the moved groups while
// it goes on with what follows — records of its other groups applied,
// the moved groups' kept, quiet watermarks passed — while A has not yet
// worked through its records before the marker. A watermark that is not
// quiet, or the end, makes B wait (here: A catches up, releases, B
// adopts) as the runtime does. A and B together emit what one instance
// emits over the whole stream, with the same late, partly late and
// skipped counts; and B did process records while A was behind. With a
// local step (local=on) the items are its raw records and partials.
func TestHoldScripted(t *testing.T) {
	aggs := []Agg{{Name: "n", Func: Count}, {Name: "sum", Func: Sum, Field: "v"}, {Name: "max", Func: Max, Field: "v"}, {Name: "big", Func: CountIf, If: oddFails{}}}
	for _, local := range []LocalMode{LocalOff, LocalOn} {
		spec := Spec{Name: "w", Key: []string{"k"}, Size: 60e9, Slide: 30e9, Aggs: aggs, Groups: 16, Local: local}
		if local == LocalOn {
			spec.Aggs = aggs[:3] // count_if runs the local step only with conditions met
		}
		t.Run(local.String(), func(t *testing.T) { holdScripted(t, spec) })
	}
}

func holdScripted(t *testing.T, spec Spec) {
	heldAfterQuiet, partials := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		stream := holdStream(600, seed)
		// Reference: one instance, everything in order.
		refDef, err := New(spec, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		items := holdItems(t, stream, refDef)
		marker := len(items) / 3
		refErrs, _ := core.NewErrorPolicy(core.Skip, "")
		var want []string
		ref := newHoldRig(t, refDef, refErrs, &want)
		for i, it := range items {
			ref.feed(t, it, i)
		}
		if err := ref.op.Finish(uint64(len(items)+1), ref.out); err != nil {
			t.Fatal(err)
		}
		ref.out.Flush()

		// Two channels sharing one definition (one state map): group g
		// on channel g%2 before the marker; the groups of keys 0, 3, 6,
		// … on channel 0 move to channel 1 at it.
		def, err := New(spec, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		var got []string
		a, b := newHoldRig(t, def, errs, &got), newHoldRig(t, def, errs, &got)
		var moved []int
		for k := int64(0); k < 24; k += 3 {
			g := kvstate.KeyGroup(core.HashKey([]core.Value{holdKey(k)}, []int{0}, []core.Type{core.String}), 16)
			if g%2 == 0 && !slices.Contains(moved, g) {
				moved = append(moved, g)
			}
		}
		owner := func(h uint64, after bool) int {
			g := kvstate.KeyGroup(h, 16)
			if after && slices.Contains(moved, g) {
				return 1
			}
			return g % 2
		}
		// A's share before the marker waits; B works through its share,
		// reaches the marker and holds.
		var aBacklog []int
		for i, it := range items[:marker] {
			switch {
			case it.wm:
				aBacklog = append(aBacklog, i)
				b.feed(t, it, i)
			case owner(it.h, false) == 0:
				aBacklog = append(aBacklog, i)
			default:
				b.feed(t, it, i)
			}
		}
		if !b.op.HoldGroups(moved) {
			t.Fatal("the window refused to hold")
		}
		// A's items after the marker, kept while A is behind.
		var aAfter []int
		handedOver := false
		handover := func() {
			for _, i := range aBacklog {
				a.feed(t, items[i], i)
			}
			for _, k := range b.op.held {
				if k.wide {
					partials++
				}
			}
			b.op.AdoptGroups(moved, a.op.ReleaseGroups(moved))
			for _, i := range aAfter {
				a.feed(t, items[i], i)
			}
			aBacklog, aAfter = nil, nil
			handedOver = true
		}
		quietHeld, heldBefore := false, 0
		for j, it := range items[marker:] {
			i := marker + j
			if !handedOver && it.wm && !b.op.Quiet(it.t*1e9-1) {
				handover()
			}
			if !handedOver && it.wm && len(b.op.held) > 0 {
				quietHeld = true // a quiet watermark passes held records
			}
			if !handedOver {
				heldBefore = len(b.op.held)
			}
			if it.wm || owner(it.h, true) == 0 {
				if handedOver {
					a.feed(t, it, i)
				} else {
					aAfter = append(aAfter, i)
				}
			}
			if it.wm || owner(it.h, true) == 1 {
				b.feed(t, it, i)
			}
		}
		if !handedOver {
			handover()
		}
		if len(b.op.held) != 0 || b.op.npend != 0 {
			t.Fatalf("seed %d: %d records still held, %d groups", seed, len(b.op.held), b.op.npend)
		}
		for _, r := range []holdRig{a, b} {
			if err := r.op.Finish(uint64(len(items)+1), r.out); err != nil {
				t.Fatal(err)
			}
			r.out.Flush()
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: %d rows vs %d", seed, len(got), len(want))
		}
		if errs.Late.Load() != refErrs.Late.Load() || errs.PartlyLate.Load() != refErrs.PartlyLate.Load() || errs.Skipped.Load() != refErrs.Skipped.Load() {
			t.Fatalf("seed %d: late %d partly %d skipped %d, want %d %d %d", seed, errs.Late.Load(), errs.PartlyLate.Load(), errs.Skipped.Load(),
				refErrs.Late.Load(), refErrs.PartlyLate.Load(), refErrs.Skipped.Load())
		}
		if quietHeld && heldBefore > 0 {
			heldAfterQuiet++
		}
	}
	if heldAfterQuiet < 5 {
		t.Fatalf("only %d of 20 streams passed a quiet watermark with records held", heldAfterQuiet)
	}
	if spec.Local == LocalOn && partials == 0 {
		t.Fatal("no partial of the local step was held")
	}
}

// Quiet is exact for fixed and calendar grids: a watermark it calls quiet
// fires nothing, and one it does not fires a window of a key that has
// a pane at every slide.
func TestQuietWatermarks(t *testing.T) {
	for _, spec := range []Spec{
		{Name: "tumbling", Key: []string{"k"}, Size: 10e9, Aggs: []Agg{{Name: "n", Func: Count}}, Groups: 4},
		{Name: "sliding", Key: []string{"k"}, Size: 30e9, Slide: 10e9, Aggs: []Agg{{Name: "n", Func: Count}}, Groups: 4},
	} {
		def, err := New(spec, scriptSchema)
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		var rows []string
		r := newHoldRig(t, def, errs, &rows)
		if r.op.Quiet(5e9) {
			t.Fatalf("%s: quiet before any watermark", spec.Name)
		}
		rnd := rand.New(rand.NewPCG(1, 1))
		wm := int64(0)
		for i := 0; i < 400; i++ {
			// A record at every watermark keeps a pane in every slide.
			r.feed(t, holdItems(t, []step{{k: 1, t: wm, v: 1}}, def)[0], 2*i)
			next := wm + rnd.Int64N(7)
			quiet := r.op.Quiet(next*1e9 - 1)
			n := len(rows)
			r.feed(t, holdItem{wm: true, t: next}, 2*i+1)
			if fired := len(rows) > n; fired == quiet && i > 5 {
				t.Fatalf("%s: watermark %d s after %d s: quiet %v, fired %v", spec.Name, next, wm, quiet, fired)
			}
			wm = next
		}
	}
}

// A channel gaining key groups from two losers holds every one of them
// until the last handoff: a group whose handoff came first stays held, so
// its later records do not pass its earlier held ones (handoff.Channel.
// Held). A float sum shows the order: 1e16 + 1 − 1e16 is 0 in record
// order and 1 with the last record added first.
func TestHoldReleasesInArrivalOrderAcrossHandoffs(t *testing.T) {
	schema := core.MustSchema(core.Field{Name: "k", Type: core.String}, core.Field{Name: "x", Type: core.Float64})
	spec := Spec{Name: "w", Key: []string{"k"}, Size: 60e9, Aggs: []Agg{{Name: "s", Func: Sum, Field: "x"}}, Groups: 16}
	key := []core.Value{core.StringValue("a")}
	h := core.HashKey(key, []int{0}, []core.Type{core.String})
	g := kvstate.KeyGroup(h, 16)
	other := (g + 1) % 16
	sum := func(hold bool) float64 {
		def, err := New(spec, schema)
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := core.NewErrorPolicy(core.Skip, "")
		var got []float64
		newOp := func() (*windowOp, *core.Emitter) {
			op, err := def.New(core.Env{Channels: 2, Errors: errs})
			if err != nil {
				t.Fatal(err)
			}
			return op.(*windowOp), core.NewEmitter(def.Out, func(b *core.Batch) error {
				for i := range b.Len {
					got = append(got, b.Row(i)[3].Float())
				}
				b.Release()
				return nil
			}, nil)
		}
		loser, _ := newOp()
		gainer, out := newOp()
		feed := func(seq uint64, x float64) {
			b := core.NewBatch(schema)
			copy(b.Append(seq, h, 5e9, int64(seq)), []core.Value{key[0], core.FloatValue(x)})
			if err := gainer.Process(b, out); err != nil {
				t.Fatal(err)
			}
			b.Release()
		}
		first, second := loser.ReleaseGroups([]int{g}), loser.ReleaseGroups([]int{other})
		if hold {
			if !gainer.HoldGroups([]int{g, other}) {
				t.Fatal("the window refused to hold")
			}
			feed(1, 1e16)
			feed(2, 1)
			gainer.AdoptGroups([]int{g}, first) // group g's handoff first
			feed(3, -1e16)
			gainer.AdoptGroups([]int{other}, second) // the last: releases the held records
		} else {
			gainer.AdoptGroups([]int{g}, first)
			gainer.AdoptGroups([]int{other}, second)
			feed(1, 1e16)
			feed(2, 1)
			feed(3, -1e16)
		}
		if err := gainer.Watermark(70e9, 4, out); err != nil {
			t.Fatal(err)
		}
		if err := out.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("hold %v: %d rows", hold, len(got))
		}
		return got[0]
	}
	if want, got := sum(false), sum(true); got != want || want != 0 {
		t.Fatalf("sum %v holding, %v without", got, want)
	}
}
