package window

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"streamd/core"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata expectations")

var scriptSchema = core.MustSchema(
	core.Field{Name: "k", Type: core.String},
	core.Field{Name: "v", Type: core.Int64},
)

type gt struct{}

func (gt) EvalBool(row []core.Value) (bool, error) { return row[1].Int() > 15, nil }

// TestScripts runs testdata/*.txt: each file starts with a "window size=…
// slide=…" or "running" line, then commands, each followed by the rows it
// emits (indented "> "):
//
//	event k=a t=5 v=3     a record of key a at event time 5 (seconds) with v=3
//	watermark 10          event time reaches 10 s (watermark 10e9-1 ns)
//	finish                end of stream
//	late                  the late and partly late records so far
//	lateness 5            an update of the allowed lateness to 5 s (Retune)
//	state                 the keys and panes the window holds
//	restore               a checkpoint of every key group, restored into a
//	                      new instance at the same watermark
//
// The window line may give lateness=N, the allowed lateness in seconds.
//
// Run with -rewrite to regenerate the expected rows after a deliberate change.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file, 6) })
		// With 4 aggregates a pane's accumulators live in place (the
		// keyState's inline pane while one pane suffices): the same rows,
		// less the last two aggregates.
		t.Run(filepath.Base(file)+"/inline", func(t *testing.T) { runScript(t, file, 4) })
	}
}

// runScript runs a script with the first nAggs of its six aggregates; with
// fewer than six it expects each row less the missing aggregates' fields.
func runScript(t *testing.T, file string, nAggs int) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var op core.Operator
	var emitted []string
	errs, _ := core.NewErrorPolicy(core.Skip, "")
	aggs := []Agg{{Name: "n", Func: Count}, {Name: "sum", Func: Sum, Field: "v"}, {Name: "min", Func: Min, Field: "v"},
		{Name: "max", Func: Max, Field: "v"}, {Name: "avg", Func: Avg, Field: "v"}, {Name: "big", Func: CountIf, If: gt{}}}[:nAggs]
	var emitter *core.Emitter
	var def core.OperatorDef
	seq := uint64(0)
	wm := int64(core.NoTime)
	var args0 map[string]int64 // the window line's
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "> ") {
			continue // expected output: regenerated below
		}
		out.WriteString(line + "\n")
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		args := map[string]int64{}
		strs := map[string]string{}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			strs[k] = v
			n, _ := strconv.ParseInt(v, 10, 64)
			args[k] = n
		}
		seq++
		if f[0] == "window" {
			args0 = args
		}
		switch f[0] {
		case "window", "running":
			if f[0] == "window" {
				def, err = New(Spec{Name: "w", Key: []string{"k"}, Size: args["size"] * 1e9, Slide: args["slide"] * 1e9, Aggs: aggs, Groups: 16,
					AllowedLateness: args["lateness"] * 1e9}, scriptSchema)
			} else {
				def, err = NewRunning(RunningSpec{Name: "r", Key: []string{"k"}, Aggs: aggs, Groups: 16}, scriptSchema)
			}
			if err != nil {
				t.Fatal(err)
			}
			op, _ = def.New(core.Env{Channels: 1, Errors: errs})
			emitter = core.NewEmitter(def.Out, func(b *core.Batch) error {
				for i := 0; i < b.Len; i++ {
					var sb []byte
					for j, fd := range def.Out.Fields {
						if j > 0 {
							sb = append(sb, ' ')
						}
						v := b.Row(i)[j]
						if fd.Type == core.Timestamp {
							sb = strconv.AppendInt(sb, v.Time()/1e9, 10)
						} else {
							sb = core.AppendText(sb, fd.Type, v)
						}
					}
					emitted = append(emitted, fmt.Sprintf("seq=%d %s", b.Seq[i], sb))
				}
				b.Release()
				return nil
			}, nil)
		case "event":
			b := core.NewBatch(scriptSchema)
			row := b.Append(seq, uint64(len(strs["k"])), args["t"]*1e9, int64(seq))
			row[0], row[1] = core.StringValue(strs["k"]), core.IntValue(args["v"])
			if err := op.Process(b, emitter); err != nil {
				t.Fatal(err)
			}
			b.Release()
		case "watermark":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			wm = max(wm, n*1e9-1)
			if err := op.Watermark(n*1e9-1, seq, emitter); err != nil {
				t.Fatal(err)
			}
		case "lateness":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			next, err := New(Spec{Name: "w", Key: []string{"k"}, Size: 1, Aggs: aggs, Groups: 16, AllowedLateness: n * 1e9}, scriptSchema)
			if err != nil {
				t.Fatal(err)
			}
			next.State = def.State // only the settings matter here
			if def, err = def.Retune(next); err != nil {
				t.Fatal(err)
			}
			if err := op.(core.Retuner).Retune(def); err != nil {
				t.Fatal(err)
			}
		case "state":
			w := op.(*windowOp)
			keys, panes := 0, 0
			for g := range 16 {
				w.state.Range(g, func(_ uint64, st *keyState) bool {
					for ; st != nil; st = st.next {
						keys++
						panes += len(st.panes)
					}
					return true
				})
			}
			fmt.Fprintf(&out, "> keys=%d panes=%d\n", keys, panes)
			continue
		case "restore":
			groups := make([]int, 16)
			for g := range groups {
				groups[g] = g
			}
			data := op.(core.AsyncSnapshotter).BeginSnapshot(groups).Bytes()
			// A new job: its own state store, at the checkpoint's watermark.
			again, err := New(Spec{Name: "w", Key: []string{"k"}, Size: args0["size"] * 1e9, Slide: args0["slide"] * 1e9, Aggs: aggs, Groups: 16,
				AllowedLateness: def.Settings.(*settings).lateness}, scriptSchema)
			if err != nil {
				t.Fatal(err)
			}
			def = again
			op, _ = def.New(core.Env{Channels: 1, Errors: errs, Rescaled: true, Watermark: wm})
			if err := op.(core.Snapshotter).RestoreGroups(data, nil); err != nil {
				t.Fatal(err)
			}
		case "finish":
			if err := op.Finish(seq, emitter); err != nil {
				t.Fatal(err)
			}
		case "late":
			fmt.Fprintf(&out, "> late=%d partly_late=%d\n", errs.Late.Load(), errs.PartlyLate.Load())
			continue
		default:
			t.Fatalf("%s: unknown command %q", file, f[0])
		}
		emitter.Flush()
		for _, e := range emitted {
			out.WriteString("> " + e + "\n")
		}
		emitted = emitted[:0]
	}
	want := string(data)
	if nAggs < 6 {
		lines := strings.SplitAfter(want, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "> seq=") {
				f := strings.Fields(l)
				lines[i] = strings.Join(f[:len(f)-(6-nAggs)], " ") + "\n"
			}
		}
		want = strings.Join(lines, "")
	} else if *rewrite {
		os.WriteFile(file, []byte(out.String()), 0o644)
		return
	}
	if got := out.String(); got != want {
		t.Errorf("%s: output differs (rerun with -rewrite to see and accept):\n%s", file, got)
	}
}
