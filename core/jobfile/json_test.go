package jobfile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// jsonInputs returns the same out-of-order keyed records, with the same
// malformed ones among them (a bad int64, a missing field, an element that
// is not an object, a field inside a value of the wrong type), as JSON
// lines, as one top-level array (an element a line), as a stream of
// pretty-printed values (three lines each), and as JSON lines of
// documents whose "rows" array holds up to five records each (explode),
// n records are 52 bytes each or more: 64,000 make 4 blocks of 1 MiB.
func jsonInputs(n int) (lines, array, values, explode string) {
	var l, a, v, e strings.Builder
	rnd := rand.New(rand.NewPCG(6, 12))
	a.WriteString("[\n")
	var doc []string
	for i := range n {
		ts := i * 3
		if rnd.IntN(25) == 0 {
			ts = max(0, ts-rnd.IntN(900))
		}
		var recs []string
		switch i % 4999 {
		case 100:
			recs = append(recs, `{"ts":7,"m":{"k":"k1"},"v":"oops"}`)
		case 200:
			recs = append(recs, `[1,2,3]`)
		case 300:
			recs = append(recs, `{"ts":7,"m":{"k":"k1"}}`)
		case 400:
			recs = append(recs, `{"ts":7,"m":"flat","v":1}`)
		}
		recs = append(recs, fmt.Sprintf(`{"ts":%d,"m":{"k":"k%d","note":"a,]}\"x"},"v":%d}`, ts, i%17, i%100))
		for _, r := range recs {
			l.WriteString(r + "\n")
			if a.Len() > 2 {
				a.WriteString(",\n")
			}
			a.WriteString(r)
			v.WriteString(strings.Replace(strings.Replace(r, `"m":`, "\n  \"m\":", 1), `,"v"`, ",\n  \"v\"", 1) + "\n")
			doc = append(doc, r)
			if len(doc) == 1+i%5 {
				fmt.Fprintf(&e, "{\"batch\":%d,\"rows\":[%s]}\n", i, strings.Join(doc, ","))
				doc = doc[:0]
			}
		}
	}
	if len(doc) > 0 {
		fmt.Fprintf(&e, "{\"batch\":0,\"rows\":[%s]}\n", strings.Join(doc, ","))
	}
	a.WriteString("\n]\n")
	return l.String(), a.String(), v.String(), e.String()
}

const jsonFieldsYAML = "{ts: int64, k: {type: string, path: m.k}, v: int64}"

// The determinism contract for the JSON formats: an array file, a stream
// of values and exploded JSON lines, each read by source workers in blocks,
// give byte-identical output and dead-letter files and the same counts
// with 1, 2, 3 and 8 source workers and 1 and 3 channels as the single
// source stage; and the same records in every format give byte-identical
// output (the fast tier runs 64,000 records and one pair of the grid per
// format, the pairs taking turns; the long one 110,000 and all).
func TestJSONSourceWorkersSameOutput(t *testing.T) {
	n := tier.Pick(64_000, 110_000) // ≥ 3.2 MB: 3 blocks or more
	bad := int64(0)                 // the malformed records jsonInputs writes
	for i := range n {
		if r := i % 4999; r >= 100 && r <= 400 && r%100 == 0 {
			bad++
		}
	}
	lines, array, values, explode := jsonInputs(n)
	bound := "300ms"
	run := func(t *testing.T, file, text, spec string, m, n int) (out, dead string, rep *runtime.Report) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, file), text)
		par := ""
		if m > 0 {
			par = fmt.Sprintf("  parallelism: %d\n", m)
		}
		job := buildJobFile(t, dir, "on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n"+par+"  "+spec+"\n"+
			"event_time: {field: ts, unit: ms, max_out_of_orderness: "+bound+"}\n"+
			"region:\n  key_by: [k]\n  ops:\n    - window: {size: 200ms, aggregates: {n: count, s: sum(v), hi: max(v)}}\n"+
			"sink:\n  csv: {path: out.csv}\n", Options{Channels: n})
		sp, ok := job.Source.(core.Splittable)
		if !ok || sp.Blocks() < 3 {
			t.Fatalf("%s: %T, splittable %v", spec, job.Source, ok)
		}
		if m < 0 {
			job.SourceParallelism = -1
		}
		rep, err := runtime.Run(context.Background(), job)
		if err != nil {
			t.Fatalf("%s, %d workers, %d channels: %v", spec, m, n, err)
		}
		d, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return readFile(t, filepath.Join(dir, "out.csv")), strings.ReplaceAll(string(d), dir, "$DIR"), rep
	}
	fast := [][2]int{{2, 3}, {8, 1}} // the fast tier's pairs, one per format in turn
	grid := fast
	if tier.Long() {
		grid = nil
		for _, m := range []int{1, 2, 3, 8} {
			for _, n := range []int{1, 3} {
				grid = append(grid, [2]int{m, n})
			}
		}
	}
	ref := ""
	for i, c := range []struct{ name, file, text, spec string }{
		{"lines", "in.jsonl", lines, "jsonl: {path: in.jsonl, fields: " + jsonFieldsYAML + "}"},
		{"array", "in.json", array, "json: {path: in.json, fields: " + jsonFieldsYAML + "}"},
		{"values", "in.json", values, "json: {path: in.json, format: values, fields: " + jsonFieldsYAML + "}"},
		{"explode", "in.jsonl", explode, "json: {path: in.jsonl, explode: rows, fields: " + jsonFieldsYAML + "}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// With a bound no record passes, the output does not depend
			// on where batches end, so every format gives the same bytes.
			bound = "1s"
			all, _, allRep := run(t, c.file, c.text, c.spec, -1, 1)
			if allRep.Late != 0 || allRep.DeadLetters != bad || allRep.RecordsIn != int64(n) {
				t.Fatalf("bound 1s: %d late, %d dead letters, %d in", allRep.Late, allRep.DeadLetters, allRep.RecordsIn)
			}
			if ref == "" {
				ref = all
			} else if all != ref {
				t.Fatalf("output differs from the JSON lines' output")
			}
			bound = "300ms"
			want, wantDead, wantRep := run(t, c.file, c.text, c.spec, -1, 1)
			if wantRep.DeadLetters != bad || wantRep.RecordsIn != int64(n) || wantRep.Late == 0 {
				t.Fatalf("single source stage: %d dead letters, %d in, %d late", wantRep.DeadLetters, wantRep.RecordsIn, wantRep.Late)
			}
			if c.name == "lines" {
				return
			}
			for j, mn := range grid {
				if !tier.Long() && j != i%len(fast) {
					continue
				}
				got, dead, rep := run(t, c.file, c.text, c.spec, mn[0], mn[1])
				if got != want || dead != wantDead || rep.Late != wantRep.Late || rep.DeadLetters != wantRep.DeadLetters || rep.RecordsIn != wantRep.RecordsIn {
					t.Fatalf("%d workers, %d channels: %d late, %d dead letters, %d in (single stage %d, %d, %d); output equal %v, dead letters equal %v",
						mn[0], mn[1], rep.Late, rep.DeadLetters, rep.RecordsIn, wantRep.Late, wantRep.DeadLetters, wantRep.RecordsIn, got == want, dead == wantDead)
				}
			}
		})
	}
}
