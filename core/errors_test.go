package core_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/internal/deadletter"
)

// readLetters reads a dead-letter file's positions, failing the test on a
// torn or malformed line.
func readLetters(t *testing.T, path string) []int64 {
	t.Helper()
	pos, err := deadletter.Positions(path)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// A muted policy drops malformed records under every mode: no count, no
// dead letter, no error; Mute nests; late records are not muted.
func TestErrorPolicyMute(t *testing.T) {
	bad := errors.New("bad")
	for _, mode := range []core.ErrorMode{core.Fail, core.Skip, core.DeadLetter} {
		dl := filepath.Join(t.TempDir(), "dead.jsonl")
		p, err := core.NewErrorPolicy(mode, dl)
		if err != nil {
			t.Fatal(err)
		}
		p.Mute()
		p.Mute()
		for i := range 3 {
			if err := p.Bad("in.csv", int64(i+1), "x", bad); err != nil {
				t.Fatalf("mode %d, muted: %v", mode, err)
			}
		}
		p.Unmute()
		if err := p.Bad("in.csv", 4, "x", bad); err != nil {
			t.Fatalf("mode %d, muted once more: %v", mode, err)
		}
		if p.Skipped.Load()+p.DeadLettered.Load() != 0 {
			t.Fatalf("mode %d: muted records counted", mode)
		}
		if _, err := os.Stat(dl); !os.IsNotExist(err) {
			t.Fatalf("mode %d: a muted record opened the dead-letter file (%v)", mode, err)
		}
		p.Unmute()
		err = p.Bad("in.csv", 5, "x", bad)
		var re *core.RecordError
		switch mode {
		case core.Fail:
			if !errors.As(err, &re) || re.Pos != 5 {
				t.Fatalf("fail, unmuted: %v", err)
			}
		case core.Skip:
			if err != nil || p.Skipped.Load() != 1 {
				t.Fatalf("skip, unmuted: %v, %d skipped", err, p.Skipped.Load())
			}
		case core.DeadLetter:
			if err != nil || p.DeadLettered.Load() != 1 {
				t.Fatalf("dead letter, unmuted: %v, %d", err, p.DeadLettered.Load())
			}
		}
		p.Mute()
		if err := p.LateRecord("window", 6, 0, "y", true); err != nil || p.Late.Load() != 1 {
			t.Fatalf("mode %d: late record while muted: %v, %d late", mode, err, p.Late.Load())
		}
		p.Unmute()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if mode == core.DeadLetter {
			if got := readLetters(t, dl); len(got) != 2 || got[0] != 5 || got[1] != 6 {
				t.Fatalf("dead letters at %v, want [5 6]", got)
			}
		}
	}
}

// Each dead letter is in the file, whole, when Bad returns: a process
// killed before Close loses none. Sync and Close fsync; Sync before any
// dead letter has nothing to do.
func TestDeadLettersWrittenThrough(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	p, _ := core.NewErrorPolicy(core.DeadLetter, dl)
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := p.Bad("in.csv", int64(i+1), strings.Repeat("x", 3000), errors.New("bad")); err != nil {
			t.Fatal(err)
		}
		if got := readLetters(t, dl); len(got) != i+1 {
			t.Fatalf("after %d dead letters the file holds %d", i+1, len(got))
		}
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatalf("Sync after Close: %v", err)
	}
}

// Opening a dead-letter file whose last line is torn (no '\n': a run that
// died while writing it) cuts that line off, so every line stays one JSON
// object; whole lines are kept.
func TestDeadLetterTornLine(t *testing.T) {
	good := `{"input":"a.csv","pos":1,"reason":"r","record":"x"}` + "\n"
	long := strings.Repeat(`{"input":"a.csv","pos":2,"reason":"r","record":"`+strings.Repeat("y", 1000)+`"}`+"\n", 150) // > 64 KiB
	for _, tc := range []struct {
		name, before, kept string
	}{
		{"no file", "", ""},
		{"whole lines", good + good, good + good},
		{"torn last line", good + `{"input":"a.csv","po`, good},
		{"torn only line", `{"input":"a.c`, ""},
		{"torn after a newline only", "\n" + `{"in`, "\n"},
		{"torn line longer than a block", good + `{"record":"` + strings.Repeat("z", 200<<10), good},
		{"whole lines over several blocks, torn", long + `{"x`, long},
		{"whole lines over several blocks", long, long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dl := filepath.Join(t.TempDir(), "dead.jsonl")
			if tc.name != "no file" {
				if err := os.WriteFile(dl, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, _ := core.NewErrorPolicy(core.DeadLetter, dl)
			if err := p.Bad("b.csv", 9, "q", errors.New("bad")); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(dl)
			if !strings.HasPrefix(string(data), tc.kept) {
				t.Fatalf("the file does not start with the whole lines before: %.100q", data)
			}
			want := `{"input":"b.csv","pos":9,"reason":"bad","record":"q"}` + "\n"
			if rest := string(data[len(tc.kept):]); rest != want {
				t.Fatalf("after the whole lines: %.200q, want %q", rest, want)
			}
			readLetters(t, dl)
		})
	}
}

// BenchmarkDeadLetter: one op is one malformed record written to the
// dead-letter file (one write(2) each: written through, not buffered).
func BenchmarkDeadLetter(b *testing.B) {
	p, _ := core.NewErrorPolicy(core.DeadLetter, filepath.Join(b.TempDir(), "dead.jsonl"))
	reason := errors.New(`field "delay": "abc" is not an int64`)
	b.ReportAllocs()
	for i := range b.N {
		if err := p.Bad("data/flights.csv", int64(i), "2024-01-01T00:10:00Z,LAX,abc", reason); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
}

// A deferred policy counts at once in its parent, holds its dead letters
// until they are taken, and the parent writes them in the order given.
func TestDeferredDeadLetters(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	p, err := core.NewErrorPolicy(core.DeadLetter, dl)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Deferred(), p.Deferred()
	for _, c := range []struct {
		d   *core.ErrorPolicy
		pos int64
	}{{b, 3}, {a, 1}, {b, 4}, {a, 2}} {
		if err := c.d.Bad("in", c.pos, "raw", errors.New("bad")); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.LateRecord("in", 5, 0, "raw", true); err != nil {
		t.Fatal(err)
	}
	if p.DeadLettered.Load() != 4 || p.Late.Load() != 1 || p.LateDeadLettered.Load() != 1 {
		t.Fatalf("counts %d %d %d", p.DeadLettered.Load(), p.Late.Load(), p.LateDeadLettered.Load())
	}
	if _, err := os.Stat(dl); !os.IsNotExist(err) {
		t.Fatalf("dead letters written before they were handed over: %v", err)
	}
	first, second := a.TakeDeferred(), b.TakeDeferred()
	if len(a.TakeDeferred()) != 0 {
		t.Fatal("taken twice")
	}
	if err := errors.Join(p.WriteDeferred(first), p.WriteDeferred(second), p.Close()); err != nil {
		t.Fatal(err)
	}
	if got := readLetters(t, dl); fmt.Sprint(got) != "[1 2 5 3 4]" {
		t.Fatalf("dead letters at %v, want [1 2 5 3 4]", got)
	}
	f, _ := core.NewErrorPolicy(core.Fail, "")
	if err := f.Deferred().Bad("in", 9, "raw", errors.New("bad")); err == nil {
		t.Fatal("a deferred Fail policy let a bad record through")
	}
}
