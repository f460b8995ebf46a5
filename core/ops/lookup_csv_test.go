package ops

import (
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"streamd/core"
)

// dataDir finds shared/data beside the repository root by walking up from
// the working directory. The data are part of the project: missing data
// fail the test, never skip it.
func dataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("STREAMD_DATA"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "data")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("shared/data not found above the working directory")
		}
		dir = parent
	}
}

// airports reads airports.csv independently of the operator: iata → row.
func airports(t *testing.T, path string) (header []string, rows map[string][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows = make(map[string][]string)
	for _, r := range all[1:] {
		rows[r[0]] = r
	}
	return all[0], rows
}

func TestLookupCSVAirports(t *testing.T) {
	path := filepath.Join(dataDir(t), "airports.csv")
	header, want := airports(t, path)
	if strings.Join(header, ",") != "iata,name,city,state,country,latitude,longitude" {
		t.Fatalf("airports.csv header: %v", header)
	}
	if len(want) != 3376 {
		t.Fatalf("airports.csv has %d airports, want 3376", len(want))
	}
	def, err := LookupCSV("airports", LookupCSVOptions{
		Path: path, Key: "origin", TableKey: "iata",
		Fields: []LookupField{{Column: "name", As: "airport"}, {Column: "city"}, {Column: "state"},
			{Column: "latitude", As: "lat", Type: core.Float64}},
	}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(carrier string, origin string, delay int64, distance float64, airport string null, city string null, state string null, lat float64 null)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(someFlights) {
		t.Fatalf("%d records, want %d (on_miss defaults to null)", len(out), len(someFlights))
	}
	for i, r := range out {
		checkMeta(t, r, i)
		if r.vals[1].Str() != someFlights[i].origin || r.vals[2].Int() != someFlights[i].delay {
			t.Errorf("record %d: input fields changed: %v", i, r.vals)
		}
		w, ok := want[someFlights[i].origin]
		if !ok {
			// XXX is not an airport: nulls, as SQL's LEFT JOIN.
			if !r.vals[4].IsNull() || !r.vals[5].IsNull() || !r.vals[6].IsNull() || !r.vals[7].IsNull() {
				t.Errorf("missed key %s: added %v, want nulls", someFlights[i].origin, r.vals[4:])
			}
			continue
		}
		lat, _ := strconv.ParseFloat(w[5], 64)
		if r.vals[4].Str() != w[1] || r.vals[5].Str() != w[2] || r.vals[6].Str() != w[3] || r.vals[7].Float() != lat {
			t.Errorf("%s: got %v, want %v", w[0], r.vals[4:], w)
		}
	}
	// Hard facts checked against the file by hand (grep).
	byOrigin := map[string]record{}
	for _, r := range out {
		byOrigin[r.vals[1].Str()] = r
	}
	if r := byOrigin["ORD"]; r.vals[5].Str() != "Chicago" || r.vals[6].Str() != "IL" {
		t.Errorf("ORD → %s, %s; want Chicago, IL", r.vals[5].Str(), r.vals[6].Str())
	}
	if r := byOrigin["DBN"]; r.vals[4].Str() != `W. H. "Bud" Barron` || r.vals[5].Str() != "Dublin" {
		t.Errorf("DBN → %q, %q; want the quoted name and Dublin", r.vals[4].Str(), r.vals[5].Str())
	}
	if r := byOrigin["SFO"]; r.vals[7].Float() != 37.61900194 {
		t.Errorf("SFO latitude %v", r.vals[7].Float())
	}
	st := def.Stats()
	if st["hits"] != 5 || st["misses"] != 1 || st["rows"] != 3376 {
		t.Errorf("stats %v", st)
	}
}

func TestLookupCSVOnMiss(t *testing.T) {
	path := filepath.Join(dataDir(t), "airports.csv")
	opts := LookupCSVOptions{Path: path, Key: "origin", TableKey: "iata", Fields: []LookupField{{Column: "city"}}}

	opts.OnMiss = "drop"
	def, err := LookupCSV("l", opts, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(someFlights)-1 {
		t.Errorf("drop: %d records, want %d", len(out), len(someFlights)-1)
	}
	for _, r := range out {
		if r.vals[1].Str() == "XXX" {
			t.Error("drop: missed record kept")
		}
	}

	opts.OnMiss = "error"
	p, path2 := policyFor(t, core.DeadLetter)
	def, err = LookupCSV("l", opts, flights, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil || len(out) != len(someFlights)-1 || p.DeadLettered.Load() != 1 {
		t.Errorf("error + dead_letter: %d records, %d dead letters, err %v", len(out), p.DeadLettered.Load(), err)
	}
	p.Close()
	if got := readFile(t, path2); !strings.Contains(got, `key not found: origin=\"XXX\"`) {
		t.Errorf("dead letter: %s", got)
	}
	def, _ = LookupCSV("l", opts, flights, nil)
	_, err = run(t, def, core.Env{}, flightBatch(someFlights))
	var re *core.RecordError
	if !errors.As(err, &re) || re.Pos != metaOf(5).Pos || !errors.Is(err, errNotFound) {
		t.Errorf("error + fail: %v", err)
	}

	opts.OnMiss = "sometimes"
	if _, err := LookupCSV("l", opts, flights, nil); err == nil {
		t.Error("bad on_miss accepted")
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookupCSVTypedKeyAndDefaults(t *testing.T) {
	// An int64 key is looked up by its text; with no Fields, every other
	// column is added as a string; the first of duplicate keys wins; an
	// empty typed cell is zero.
	path := writeFile(t, "\ufeff\"delay\",label,weight\n17,\"late, a bit\",2.5\n17,dup,9\n0,on time,\n") // a mark, then a quoted header (Excel)
	def, err := LookupCSV("l", LookupCSVOptions{Path: path, Key: "delay"}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := def.Out.String(), "(carrier string, origin string, delay int64, distance float64, label string null, weight string null)"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	out, err := run(t, def, core.Env{}, flightBatch(someFlights))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].vals[4].Str() != "late, a bit" || out[0].vals[5].Str() != "2.5" || out[3].vals[4].Str() != "on time" {
		t.Errorf("got %v / %v", out[0].vals[4:], out[3].vals[4:])
	}
	def, err = LookupCSV("l", LookupCSVOptions{Path: path, Key: "delay", Fields: []LookupField{{Column: "weight", Type: core.Float64}}}, flights, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = run(t, def, core.Env{}, flightBatch(someFlights))
	if out[0].vals[4].Float() != 2.5 || out[3].vals[4].Float() != 0 {
		t.Errorf("weights %v %v", out[0].vals[4].Float(), out[3].vals[4].Float())
	}
}

func TestLookupCSVConstructorErrors(t *testing.T) {
	good := filepath.Join(dataDir(t), "airports.csv")
	tests := []struct {
		name string
		opts LookupCSVOptions
		msg  string
	}{
		{"no file", LookupCSVOptions{Path: "/nonexistent/x.csv", Key: "origin"}, "no such file"},
		{"bad key", LookupCSVOptions{Path: good, Key: "orign", TableKey: "iata"}, `no field "orign"`},
		{"bad table key", LookupCSVOptions{Path: good, Key: "origin"}, `no column "origin" (columns: iata, name`},
		{"bad column", LookupCSVOptions{Path: good, Key: "origin", TableKey: "iata", Fields: []LookupField{{Column: "town"}}}, `no column "town"`},
		{"clash", LookupCSVOptions{Path: good, Key: "origin", TableKey: "iata", Fields: []LookupField{{Column: "name", As: "carrier"}}}, `"carrier" is already in the input`},
		{"bad cell", LookupCSVOptions{Path: writeFile(t, "k,n\na,1\nb,x\n"), Key: "origin", TableKey: "k", Fields: []LookupField{{Column: "n", Type: core.Int64}}}, `t.csv:3:3: column "n": "x" is not an int64`},
		{"ragged", LookupCSVOptions{Path: writeFile(t, "k,n\na,1,2\n"), Key: "origin", TableKey: "k"}, "wrong number of fields"},
		{"empty", LookupCSVOptions{Path: writeFile(t, ""), Key: "origin"}, "expected a header row"},
	}
	for _, tt := range tests {
		_, err := LookupCSV("l", tt.opts, flights, nil)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.msg)
		}
	}
}
