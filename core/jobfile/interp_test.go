package jobfile

import (
	"path/filepath"
	"testing"
)

func TestInterpolate(t *testing.T) {
	t.Setenv("STREAMD_T_SET", "x")
	t.Setenv("STREAMD_T_EMPTY", "")
	for _, c := range []struct{ in, want string }{
		{"${STREAMD_T_SET}", "x"},
		{"${STREAMD_T_SET:-d}", "x"},
		{"${STREAMD_T_UNSET:-d}", "d"},
		{"${STREAMD_T_EMPTY:-d}", "d"}, // empty counts as unset, as in sh's :-
		{"${STREAMD_T_EMPTY}", ""},
		{"${STREAMD_T_UNSET}", ""},
		{"${STREAMD_T_UNSET:-}", ""},
		{"${STREAMD_T_UNSET:-../data dir/x.csv}", "../data dir/x.csv"},
		{"a${STREAMD_T_SET}b${STREAMD_T_UNSET:-c}d", "axbcd"},
		// Not references: left as written.
		{"$STREAMD_T_SET", "$STREAMD_T_SET"},
		{"${STREAMD_T_SET-d}", "${STREAMD_T_SET-d}"},
		{"${1X}", "${1X}"},
		{"${STREAMD_T_UNSET:-a}}", "a}"},
	} {
		if got := Interpolate(c.in); got != c.want {
			t.Errorf("Interpolate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestInterpolationInJob: variables are replaced before the YAML is parsed,
// so they can give numbers and paths; relative paths, whether written or
// from a default, are relative to the job file's directory.
func TestInterpolationInJob(t *testing.T) {
	const job = `name: ${STREAMD_T_NAME:-interp}
on_error: ${STREAMD_T_ON_ERROR:-skip}
dead_letter_path: ${STREAMD_T_OUT:-out}/dead.jsonl
source:
  csv:
    path: ${STREAMD_T_DATA:-data}/flights.csv
    columns: {origin: string, delay: int64}
region:
  channels: ${STREAMD_T_CHANNELS:-3}
  key_by: [origin]
  ops:
    - aggregate:
        aggregates:
          n: count
post:
  - lookup_csv:
      path: ../tables/airports.csv
      key: origin
      table_key: iata
      fields: [city as origin_city]
sink:
  csv:
    path: ${STREAMD_T_OUT:-out}/result.csv
`
	const input = "origin,delay\nSFO,5\nLAX,x\nSFO,7\n"
	const want = "origin,n,origin_city\nSFO,1,San Francisco\nSFO,2,San Francisco\n"

	t.Run("defaults", func(t *testing.T) {
		root := t.TempDir()
		jobDir := filepath.Join(root, "jobs")
		writeFile(t, filepath.Join(jobDir, "data", "flights.csv"), input)
		copyFile(t, "testdata/airports.csv", filepath.Join(root, "tables", "airports.csv"))
		f := runJobIn(t, jobDir, job, want, 1)
		if f.Spec.Name != "interp" || f.Spec.OnError != "skip" || *f.Spec.Region.Channels != 3 {
			t.Errorf("name %q, on_error %q, channels %d", f.Spec.Name, f.Spec.OnError, *f.Spec.Region.Channels)
		}
		assertMissing(t, filepath.Join(jobDir, "out", "dead.jsonl"))
	})
	t.Run("set", func(t *testing.T) {
		root := t.TempDir()
		jobDir := filepath.Join(root, "jobs")
		data, out := filepath.Join(root, "elsewhere"), filepath.Join(root, "results")
		writeFile(t, filepath.Join(data, "flights.csv"), input)
		copyFile(t, "testdata/airports.csv", filepath.Join(root, "tables", "airports.csv"))
		t.Setenv("STREAMD_T_NAME", "named")
		t.Setenv("STREAMD_T_ON_ERROR", "dead_letter")
		t.Setenv("STREAMD_T_DATA", data)
		t.Setenv("STREAMD_T_OUT", out)
		t.Setenv("STREAMD_T_CHANNELS", "2")
		f := runJobIn(t, jobDir, job, "", 1)
		if f.Spec.Name != "named" || f.Spec.OnError != "dead_letter" || *f.Spec.Region.Channels != 2 {
			t.Errorf("name %q, on_error %q, channels %d", f.Spec.Name, f.Spec.OnError, *f.Spec.Region.Channels)
		}
		if got := readFile(t, filepath.Join(out, "result.csv")); got != want {
			t.Errorf("output\n%s\nwant\n%s", got, want)
		}
		dl := readDeadLetters(t, filepath.Join(out, "dead.jsonl"))
		if len(dl) != 1 || dl[0].Input != filepath.Join(data, "flights.csv") || dl[0].Pos != 3 || dl[0].Record != "LAX,x" {
			t.Errorf("dead letters %+v", dl)
		}
	})
}

// runJobIn writes job.yaml into dir and runs it; with want set, it checks
// dir/out/result.csv. bad is the number of bad records.
func runJobIn(t *testing.T, dir, job, want string, bad int64) *File {
	t.Helper()
	rep, err := runJobFile(t, dir, job)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped+rep.DeadLetters != bad {
		t.Errorf("skipped %d, dead letters %d; want %d bad", rep.Skipped, rep.DeadLetters, bad)
	}
	f, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want != "" {
		if got := readFile(t, filepath.Join(dir, "out", "result.csv")); got != want {
			t.Errorf("output\n%s\nwant\n%s", got, want)
		}
	}
	return f
}
