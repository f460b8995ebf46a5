package jobfile

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected sections of testdata scripts")

// TestConfigErrors runs testdata/errors/*.txt. Each holds a job.yaml and
// its input files as sections (testdata/in.csv and testdata/airports.csv
// are there too unless a section replaces them), and under "-- error --"
// what Load and Build must report: the error, with the temporary
// directory's path removed, then the job.yaml line it names with a caret
// under the column. Run with -rewrite to regenerate the error sections
// after a deliberate change, and read the diff.
func TestConfigErrors(t *testing.T) {
	files, _ := filepath.Glob("testdata/errors/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts in testdata/errors")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			a := readArchive(t, file)
			dir := t.TempDir()
			for _, name := range []string{"in.csv", "airports.csv"} {
				copyFile(t, filepath.Join("testdata", name), filepath.Join(dir, name))
			}
			a.extract(t, dir, "error")
			job := filepath.Join(dir, "job.yaml")
			err := loadAndBuild(job)
			if err == nil {
				t.Fatalf("%s: no error", file)
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
			var je *Error
			if !errors.As(err, &je) {
				t.Errorf("error %T is not a *jobfile.Error: %v", err, err)
			} else {
				if je.File != job {
					t.Errorf("Error.File = %q, want %q", je.File, job)
				}
				got += caret(t, job, je.Line, je.Column)
			}
			if *rewrite {
				a.set("error", got)
				a.write(t, file)
				return
			}
			want, ok := a.get("error")
			if !ok {
				t.Fatalf("%s has no -- error -- section", file)
			}
			if got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// caret renders line of the file with a "^" under col; "" for line 0.
func caret(t *testing.T, file string, line, col int) string {
	t.Helper()
	if line == 0 {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if line > len(lines) {
		t.Fatalf("error at line %d of a %d-line file", line, len(lines))
	}
	l := lines[line-1]
	if n := len([]rune(l)); col < 1 || col > n+1 {
		t.Fatalf("error at column %d of line %d, which has %d characters", col, line, n)
	}
	return l + "\n" + strings.Repeat(" ", col-1) + "^\n"
}

func loadAndBuild(path string) error {
	f, err := Load(path)
	if err != nil {
		return err
	}
	job, err := f.Build(Options{})
	if err != nil {
		return err
	}
	job.Source.Close()
	return nil
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
