package jobfile

import (
	"fmt"
	"streamd/core/plan"
	"strings"
)

// The determinism contract (docs/ARCHITECTURE.md, "Determinism"): a job
// whose every feature keeps the strong promise gives byte-identical output
// and dead-letter files, and the same counts, for any source parallelism,
// channel count, output workers, live channel change and restore. A kind
// that can break it says so through its registry entry's weak function;
// Promise collects them, streamd validate prints the result, and a job
// with `determinism: strong` refuses to build with any of them.

// Promise is what a job's output promises.
type Promise struct {
	// Weak lists the uses of features outside the strong promise, in file
	// order; empty: the strong promise holds.
	Weak []WeakUse
}

// WeakUse is one use of a feature outside the strong promise.
type WeakUse struct {
	At  string // its path in the file: "source.stdin", "pipeline[1].lookup_http"
	Why string
}

// Strong says whether the strong promise holds.
func (p Promise) Strong() bool { return len(p.Weak) == 0 }

// String is the promise in a sentence or two, as streamd validate prints
// it.
func (p Promise) String() string {
	if p.Strong() {
		return "determinism: strong — output and dead letters are byte-identical for any source parallelism, channel count, output workers, live channel change and restore"
	}
	var b strings.Builder
	if p.repeats() {
		b.WriteString("determinism: weak — per-key order holds, but output may differ between runs and a restore may write records again:")
	} else {
		b.WriteString("determinism: weak — exactly-once per checkpoint and per-key order hold, but output may differ between runs:")
	}
	for _, w := range p.Weak {
		fmt.Fprintf(&b, "\n  %s: %s", w.At, w.Why)
	}
	return b.String()
}

// repeats says whether a weak use is the sink's (sinkEntry.weak): one that
// writes again after a restore, so that exactly-once does not hold.
func (p Promise) repeats() bool {
	for _, w := range p.Weak {
		if strings.HasPrefix(w.At, "sink.") {
			return true
		}
	}
	return false
}

// Determinism values of the job file's determinism: key.
const (
	// DeterminismAny (the default, also written "any") takes the promise
	// the job's features give.
	DeterminismAny = ""
	// DeterminismStrong refuses a job with a feature outside the strong
	// promise.
	DeterminismStrong = "strong"
)

// Promise returns the promise of the decoded job: the features it uses
// outside the strong contract. Kinds the file does not name decide
// nothing (the build reports them).
func (f *File) Promise() Promise {
	var p Promise
	if k, spec, ok := sourceKinds.chosen(f.Spec.Source.sources); ok && k.weak != nil {
		if sub, why := k.weak(spec); why != "" {
			p.Weak = append(p.Weak, WeakUse{At: "source." + k.name + sub, Why: why})
		}
	}
	if k, spec, ok := sourceKinds.chosen(f.Spec.Source.sources); ok && k.name == "generator" {
		// A rate moves batch boundaries, and so where watermarks advance:
		// harmless while event time never decreases (the generator's ts
		// and seq), not for an event time that can go back.
		g, _ := spec.(*GeneratorSpec)
		if et := f.Spec.EventTime; g != nil && et != nil && (g.Rate > 0 || len(g.RateSteps) > 0) &&
			(et.Expr != "" || et.Field != "ts" && et.Field != "seq") {
			p.Weak = append(p.Weak, WeakUse{At: "event_time", Why: "a generator with a rate ends its batches where the clock does, so where watermarks advance and which records are late, and this event time can decrease; drop the rate, or take event time from ts or seq"})
		}
	}
	ops := func(at string, list []OpSpec) {
		for i, o := range list {
			k, spec, ok := opKinds.chosen(o.ops)
			if !ok || k.weak == nil {
				continue
			}
			if sub, why := k.weak(spec); why != "" {
				p.Weak = append(p.Weak, WeakUse{At: fmt.Sprintf("%s[%d].%s%s", at, i, k.name, sub), Why: why})
			}
		}
	}
	ops("pipeline", f.Spec.Pipeline)
	if f.Spec.Region != nil {
		ops("region.ops", f.Spec.Region.Ops)
	}
	ops("post", f.Spec.Post)
	if k, spec, ok := sinkKinds.chosen(f.Spec.Sink.sinks); ok && k.weak != nil && f.Spec.Checkpoint != nil {
		if sub, why := k.weak(spec); why != "" {
			p.Weak = append(p.Weak, WeakUse{At: "sink." + k.name + sub, Why: why})
		}
	}
	if f.orderWeak != nil {
		p.Weak = append(p.Weak, *f.orderWeak)
	}
	return p
}

// checkRegionOrder notes, once the region's operators are built, a
// window followed in the region by an operator that does not keep the
// window's end and key fields unchanged (plan.RegionOrderKept): the
// merger then interleaves the channels' rows of one firing by channel,
// so their order depends on the channel count. It is a weak use
// (Promise); under determinism: strong, an error at that operator. An
// unordered region has no order to keep.
func (f *File) checkRegionOrder(reg *plan.Region) error {
	if reg.Unordered {
		return nil
	}
	ok, at := plan.RegionOrderKept(reg.Ops)
	if ok {
		return nil
	}
	w := WeakUse{At: fmt.Sprintf("region.ops[%d]", at), Why: fmt.Sprintf("%s comes after a window in the region and does not keep the window's end and key fields as they are, so the rows of one firing come out in channel order; keep those fields (a map may add fields, a project may rename them) or move it after the region (post:)", reg.Ops[at].Name)}
	f.orderWeak = &w
	if f.Spec.Determinism != DeterminismStrong {
		return nil
	}
	line, _ := f.rawPos(f.pos("determinism"))
	return f.errAt(w.At, "determinism: strong (line %d) promises byte-identical output, but %s", line, w.Why)
}

// checkDeterminism applies the determinism: key.
func (f *File) checkDeterminism() error {
	switch f.Spec.Determinism {
	case DeterminismAny, "any":
		return nil
	case DeterminismStrong:
	default:
		return f.errAt("determinism", "determinism must be strong or any, not %q", f.Spec.Determinism)
	}
	p := f.Promise()
	if p.Strong() {
		return nil
	}
	w := p.Weak[0]
	line, _ := f.rawPos(f.pos("determinism"))
	return f.errAt(w.At, "determinism: strong (line %d) promises byte-identical output, but %s", line, w.Why)
}
