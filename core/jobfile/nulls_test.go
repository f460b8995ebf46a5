package jobfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamd/core"
	"streamd/core/runtime"
	"streamd/internal/tier"
)

// gapRecord is one record of the gap inputs: a field that is nil is
// missing (CSV: an empty field; JSON: null on even i, an absent member on
// odd i).
type gapRecord struct {
	i    int
	ts   *int64
	k    *string
	v    *int64
	f    *float64
	q    *int64
	late bool
}

// gapRecords are 170,000 records in time order (3 ms apart) with gaps:
// every 13th key, every 5th v, every 11th f and every 17th q missing, and
// every 4999th ts (not nullable: a malformed record).
func gapRecords() []gapRecord {
	rs := make([]gapRecord, 170_000)
	for i := range rs {
		r := gapRecord{i: i}
		ts := int64(i * 3)
		if i%4999 != 100 {
			r.ts = &ts
		}
		if i%13 != 0 {
			k := "k" + strconv.Itoa(i%7)
			r.k = &k
		}
		if i%5 != 0 {
			v := int64(i%100 - 30)
			r.v = &v
		}
		if i%11 != 0 {
			f := float64(i%40) / 4
			r.f = &f
		}
		if i%17 != 0 {
			q := int64(i % 3)
			r.q = &q
		}
		rs[i] = r
	}
	return rs
}

// gapTexts writes the records as CSV (empty fields) and JSON lines (null
// and absent members).
func gapTexts(rs []gapRecord) (csvText, jsonlText string) {
	var c, j strings.Builder
	c.WriteString("ts,k,v,f,q\n")
	for _, r := range rs {
		var cf, jf []string
		add := func(name string, set bool, text, jtext string) {
			if set {
				cf, jf = append(cf, text), append(jf, fmt.Sprintf("%q:%s", name, jtext))
				return
			}
			cf = append(cf, "")
			if r.i%2 == 0 {
				jf = append(jf, fmt.Sprintf("%q:null", name))
			}
		}
		add("ts", r.ts != nil, fmt.Sprint(deref(r.ts)), fmt.Sprint(deref(r.ts)))
		add("k", r.k != nil, deref(r.k), strconv.Quote(deref(r.k)))
		add("v", r.v != nil, fmt.Sprint(deref(r.v)), fmt.Sprint(deref(r.v)))
		add("f", r.f != nil, fmt.Sprint(deref(r.f)), fmt.Sprint(deref(r.f)))
		add("q", r.q != nil, fmt.Sprint(deref(r.q)), fmt.Sprint(deref(r.q)))
		c.WriteString(strings.Join(cf, ",") + "\n")
		j.WriteString("{" + strings.Join(jf, ",") + "}\n")
	}
	return c.String(), j.String()
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// gapJob filters, maps and windows the gap records: filter v == nil ||
// v % 4 != 1 (a null v passes by the first test), map w = v * 2 (null
// when v is), then 200 ms windows keyed by k (null a key of its own).
const gapJob = `region:
  key_by: [k]
  ops:
    - filter: "v == nil || v % 4 != 1"
    - map: {w: "v * 2"}
    - window:
        size: 200ms
        aggregates: {n: count, nv: count(v), s: sum(v), lo: min(v), hi: max(v), a: avg(f), w2: sum(w), big: "count_if(v > 50)", qs: sum(q)}
`

// gapReference computes gapJob's CSV output by SQL's rules, directly from
// the records: GROUP BY window, k (NULL last within a window), aggregates
// skipping nulls and NULL over none, count_if not counting a null
// condition, q's default 7 where it is missing.
func gapReference(rs []gapRecord) string {
	type acc struct {
		n, nv, s, lo, hi, w2, big, qs, nf int64
		fs                                float64
	}
	type key struct {
		win  int64
		null bool
		k    string
	}
	groups := map[key]*acc{}
	for _, r := range rs {
		if r.ts == nil {
			continue // malformed: a dead letter
		}
		if r.v != nil && *r.v%4 == 1 {
			continue // filtered out
		}
		g := key{win: *r.ts / 200, null: r.k == nil, k: deref(r.k)}
		a := groups[g]
		if a == nil {
			a = &acc{}
			groups[g] = a
		}
		a.n++
		if r.v != nil {
			v := *r.v
			if a.nv == 0 || v < a.lo {
				a.lo = v
			}
			if a.nv == 0 || v > a.hi {
				a.hi = v
			}
			a.nv++
			a.s += v
			a.w2 += 2 * v
			if v > 50 {
				a.big++
			}
		}
		if r.f != nil {
			a.nf++
			a.fs += *r.f
		}
		q := int64(7)
		if r.q != nil {
			q = *r.q
		}
		a.qs += q
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.win != b.win {
			return a.win < b.win
		}
		if a.null != b.null {
			return b.null // NULLS LAST
		}
		return a.k < b.k
	})
	var b strings.Builder
	b.WriteString("window_start,window_end,k,n,nv,s,lo,hi,a,w2,big,qs\n")
	ts := func(ms int64) string {
		return string(core.AppendText(nil, core.Timestamp, core.TimeValue(ms*1e6)))
	}
	for _, k := range keys {
		a := groups[k]
		s, lo, hi, w2, avg := "", "", "", "", ""
		if a.nv > 0 {
			s, lo, hi, w2 = fmt.Sprint(a.s), fmt.Sprint(a.lo), fmt.Sprint(a.hi), fmt.Sprint(a.w2)
		}
		if a.nf > 0 {
			avg = strconv.FormatFloat(a.fs/float64(a.nf), 'g', -1, 64)
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d,%d,%s,%s,%s,%s,%s,%d,%d\n", ts(k.win*200), ts(k.win*200+200), k.k, a.n, a.nv, s, lo, hi, avg, w2, a.big, a.qs)
	}
	return b.String()
}

// Missing values end to end: CSV empty fields and JSON nulls and absent
// members under nullable and default, through a filter, a map and a keyed
// window, give the output SQL's rules give (gapReference), byte for byte,
// for 1, 2, 3 and 8 source workers and 1 and 3 channels (the long tier;
// one pair per format in the fast one, 8 workers and 3 channels for CSV,
// 3 and 1 for JSON lines); the records with no ts are dead letters,
// counted.
func TestNullsSameOutputAsSQL(t *testing.T) {
	rs := gapRecords()
	csvText, jsonlText := gapTexts(rs)
	want := gapReference(rs)
	var dead int64
	for _, r := range rs {
		if r.ts == nil {
			dead++
		}
	}
	cols := "{ts: int64, k: {type: string, nullable: true}, v: {type: int64, nullable: true}, f: {type: float64, nullable: true}, q: {type: int64, default: 7}}"
	for _, kind := range []struct {
		name, file, text, spec string
		fast                   [][2]int // the fast tier's (workers, channels) pairs
	}{
		{"csv", "in.csv", csvText, "csv: {path: in.csv, columns: " + cols + "}", [][2]int{{8, 3}}},
		{"jsonl", "in.jsonl", jsonlText, "jsonl: {path: in.jsonl, fields: " + cols + "}", [][2]int{{3, 1}}},
	} {
		// Every input is compared with the reference, so each pair stands
		// alone: the fast tier runs one per format, the long one the grid.
		grid := kind.fast
		if tier.Long() {
			grid = nil
			for _, m := range []int{1, 2, 3, 8} {
				for _, n := range []int{1, 3} {
					grid = append(grid, [2]int{m, n})
				}
			}
		}
		for _, mn := range grid {
			m, n := mn[0], mn[1]
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, kind.file), kind.text)
			text := fmt.Sprintf("on_error: dead_letter\ndead_letter_path: dead.jsonl\nsource:\n  parallelism: %d\n  %s\n", m, kind.spec) +
				"event_time: {field: ts, unit: ms, max_out_of_orderness: 300ms}\n" + gapJob + "sink:\n  csv: {path: out.csv}\n"
			job := buildJobFile(t, dir, text, Options{Channels: n})
			if sp, ok := job.Source.(core.Splittable); !ok || sp.Blocks() < 3 {
				t.Fatalf("%s: the input (%d bytes) is not read by blocks: %T", kind.name, len(kind.text), job.Source)
			}
			rep, err := runtime.Run(context.Background(), job)
			if err != nil {
				t.Fatalf("%s, %d workers, %d channels: %v", kind.name, m, n, err)
			}
			if got := readFile(t, filepath.Join(dir, "out.csv")); got != want {
				t.Fatalf("%s, %d workers, %d channels: output differs from the reference at byte %d:\n%s", kind.name, m, n, firstDifference(got, want), excerpt(got, want))
			}
			if rep.DeadLetters != dead || rep.Late != 0 {
				t.Fatalf("%s, %d workers, %d channels: %d dead letters, %d late; want %d, 0", kind.name, m, n, rep.DeadLetters, rep.Late, dead)
			}
		}
	}
}

func firstDifference(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func excerpt(got, want string) string {
	i := firstDifference(got, want)
	lo := max(0, strings.LastIndexByte(got[:i], '\n'))
	return fmt.Sprintf(" got %q\nwant %q", got[lo:min(len(got), lo+300)], want[lo:min(len(want), lo+300)])
}

// A null lookup key matches nothing, not even the table's row with an
// empty key (SQL: NULL = ” is not true): under on_miss: drop the record
// goes, under the default it gets the empty fields of a miss, under
// on_miss: null nulls. The JSON
// lines sink writes a null as null, the CSV sink as an empty field; ??
// replaces a null.
func TestNullLookupKeyAndSinks(t *testing.T) {
	const in = "origin,delay\nSFO,5\n,7\nLAX,\n,\n"
	const table = "iata,city\nSFO,San Francisco\n,Nowhere\nLAX,Los Angeles\n"
	for _, c := range []struct{ miss, sink, want string }{
		{"drop", "jsonl: {path: out.jsonl}",
			`{"origin":"SFO","delay":5,"city":"San Francisco","d":5}` + "\n" +
				`{"origin":"LAX","delay":null,"city":"Los Angeles","d":-1}` + "\n"},
		{"empty", "csv: {path: out.jsonl}",
			"origin,delay,city,d\nSFO,5,San Francisco,5\n,7,,7\nLAX,,Los Angeles,-1\n,,,-1\n"},
		// on_miss: null adds nulls, as SQL's LEFT JOIN: null in JSON, and
		// the map sees nil (c ?? "?").
		{"null", "jsonl: {path: out.jsonl}",
			`{"origin":"SFO","delay":5,"city":"San Francisco","d":5,"c":"San Francisco"}` + "\n" +
				`{"origin":null,"delay":7,"city":null,"d":7,"c":"?"}` + "\n" +
				`{"origin":"LAX","delay":null,"city":"Los Angeles","d":-1,"c":"Los Angeles"}` + "\n" +
				`{"origin":null,"delay":null,"city":null,"d":-1,"c":"?"}` + "\n"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "in.csv"), in)
		writeFile(t, filepath.Join(dir, "airports.csv"), table)
		text := "source:\n  csv: {path: in.csv, columns: {origin: {type: string, nullable: true}, delay: {type: int64, nullable: true}}}\n" +
			"pipeline:\n  - lookup_csv: {path: airports.csv, key: origin, table_key: iata, fields: [city], on_miss: " + c.miss + "}\n" +
			"  - map: {d: \"delay ?? -1\"}\n" +
			mapCity(c.miss) +
			"sink:\n  " + c.sink + "\n"
		if _, err := runJobFile(t, dir, text); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(dir, "out.jsonl")); got != c.want {
			t.Errorf("on_miss: %s:\n got %q\nwant %q", c.miss, got, c.want)
		}
	}
}

// mapCity adds c: city ?? "?" for the on_miss: null case.
func mapCity(miss string) string {
	if miss != "null" {
		return ""
	}
	return "  - map: {c: \"city ?? '?'\"}\n"
}

// gapRow is a gap record as a Parquet row: optional columns for k, v and
// f; q required (7 where the record has none, q's default in gapJob).
type gapRow struct {
	Ts int64    `parquet:"ts"`
	K  *string  `parquet:"k,optional"`
	V  *int64   `parquet:"v,optional"`
	F  *float64 `parquet:"f,optional"`
	Q  int64    `parquet:"q"`
}

// Parquet nulls end to end: the optional columns of a file that holds
// nulls are nullable without being declared, and the gap job over it gives
// SQL's output for any number of source workers and channels (3 workers
// and 3 channels in the fast tier; also 1 and 1, 8 and 1, 2 and 3 in the
// long one).
func TestNullsParquetSameOutputAsSQL(t *testing.T) {
	var rs []gapRecord
	var rows []gapRow
	for _, r := range gapRecords() {
		if r.ts == nil {
			continue // ts is required in the file
		}
		q := int64(7)
		if r.q != nil {
			q = *r.q
		}
		rs = append(rs, r)
		rows = append(rows, gapRow{Ts: *r.ts, K: r.k, V: r.v, F: r.f, Q: q})
	}
	want := gapReference(rs)
	src := filepath.Join(t.TempDir(), "in.parquet")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[gapRow](f, parquet.MaxRowsPerRowGroup(30_000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	grid := [][2]int{{3, 3}}
	if tier.Long() {
		grid = append(grid, [2]int{1, 1}, [2]int{8, 1}, [2]int{2, 3})
	}
	for _, mn := range grid {
		m, n := mn[0], mn[1]
		dir := t.TempDir()
		text := fmt.Sprintf("source:\n  parallelism: %d\n  parquet: {path: %s}\n", m, src) +
			"event_time: {field: ts, unit: ms, max_out_of_orderness: 300ms}\n" + gapJob + "sink:\n  csv: {path: out.csv}\n"
		job := buildJobFile(t, dir, text, Options{Channels: n})
		if got := job.Source.Schema().String(); got != "(ts int64, k string null, v int64 null, f float64 null, q int64)" {
			t.Fatalf("schema %s", got)
		}
		if _, err := runtime.Run(context.Background(), job); err != nil {
			t.Fatalf("%d workers, %d channels: %v", m, n, err)
		}
		if got := readFile(t, filepath.Join(dir, "out.csv")); got != want {
			t.Fatalf("%d workers, %d channels: output differs from the reference:\n%s", m, n, excerpt(got, want))
		}
	}
}
