package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/core/timeparse"
)

var kv = []core.Field{{Name: "k", Type: core.String}, {Name: "v", Type: core.Int64}}

// TestStdinLinger: records that arrive slowly come out in partial batches
// soon after they arrive, not when a batch fills. The input stays open, so
// a source that waited for a full batch would hang the test (go test's
// -timeout ends it); no wall-clock bound is asserted.
func TestStdinLinger(t *testing.T) {
	for _, format := range []string{"csv", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			pr, pw := io.Pipe()
			s, err := Stdin(format, StdinOptions{Reader: pr, Columns: kv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			line := func(i int) string {
				if format == "csv" {
					return fmt.Sprintf("k%d,%d\n", i, i)
				}
				return fmt.Sprintf(`{"k":"k%d","v":%d}`+"\n", i, i)
			}
			go func() {
				io.WriteString(pw, line(1)+line(2)+line(3))
			}()
			b, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := b.Len
			b.Release()
			for n < 3 { // the three lines may straddle a linger
				b, err := s.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				n += b.Len
				b.Release()
			}
			go func() {
				io.WriteString(pw, line(4))
				pw.Close()
			}()
			b, err = s.Next(ctx)
			if err != nil || b.Len != 1 || b.Row(0)[1].Int() != 4 || b.Pos[0] != 4 {
				t.Fatalf("after a pause: %v %v", b, err)
			}
			b.Release()
			if _, err := s.Next(ctx); err != io.EOF {
				t.Fatalf("at the end: %v", err)
			}
		})
	}
}

func TestStdinBulk(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("k,v\n")
	const n = 5000
	for i := range n {
		fmt.Fprintf(&sb, "k%d,%d\n", i%7, i)
	}
	sb.WriteString("bad,x\n")
	s, err := Stdin("csv", StdinOptions{Reader: strings.NewReader(sb.String()), Header: true, Columns: kv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got int64
	for {
		b, err := s.Next(ctx)
		if err != nil {
			var re *core.RecordError
			if !errors.As(err, &re) || re.Pos != n+2 || re.Input != "stdin" {
				t.Fatalf("end: %v", err)
			}
			break
		}
		for i := 0; i < b.Len; i++ {
			if b.Row(i)[1].Int() != got || b.Pos[i] != got+2 {
				t.Fatalf("record %d: %v at %d", got, b.Row(i), b.Pos[i])
			}
			got++
		}
		b.Release()
	}
	if got != n {
		t.Fatalf("%d records before the error, want %d", got, n)
	}
}

func TestStdinHeaderSchema(t *testing.T) {
	s, err := Stdin("csv", StdinOptions{Reader: strings.NewReader("a;b\n1;2\n"), Header: true, Delimiter: ';'}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, _ := drain(t, s)
	if s.Schema().String() != "(a string, b string)" || len(rows) != 1 || rows[0][1].Str() != "2" {
		t.Fatalf("%s %v", s.Schema(), rows)
	}
}

func TestStdinCtxAndClose(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	s, err := Stdin("jsonl", StdinOptions{Reader: pr, Columns: kv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The input never ends: Next returns only if it honours ctx.
	c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Next(c); err != context.DeadlineExceeded {
		t.Fatalf("Next on a stalled input: %v", err)
	}
	// Close while the goroutine is blocked reading: it must return
	// (goleak in TestMain).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); err == nil {
		t.Fatal("Next after Close: no error")
	}
}

// TestStdinCloseUnread: the goroutine, blocked on a full batch nobody
// takes, stops on Close.
func TestStdinCloseUnread(t *testing.T) {
	var sb strings.Builder
	for i := range 3 * core.BatchSize {
		fmt.Fprintf(&sb, "k,%d\n", i)
	}
	s, err := Stdin("csv", StdinOptions{Reader: io.NopCloser(strings.NewReader(sb.String())), Columns: kv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	s.Close()
}

func TestStdinFormat(t *testing.T) {
	if _, err := Stdin("xml", StdinOptions{Reader: strings.NewReader("")}, nil); err == nil || !strings.Contains(err.Error(), `unknown format "xml"`) {
		t.Fatalf("%v", err)
	}
	if _, err := Stdin("csv", StdinOptions{Reader: strings.NewReader(""), Header: true}, nil); err == nil || !strings.Contains(err.Error(), "stdin: empty input: no header") {
		t.Fatalf("%v", err)
	}
}

// Timestamp fields of stdin, CSV and JSON lines, read by their formats.
func TestStdinTimeFormats(t *testing.T) {
	day, err := timeparse.New("%d.%m.%Y", "", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := timeparse.New("", "ms", "")
	if err != nil {
		t.Fatal(err)
	}
	fields := []core.Field{{Name: "day", Type: core.Timestamp}, {Name: "at", Type: core.Timestamp}}
	times := TimeFormats{"day": day, "at": ms}
	for format, in := range map[string]string{
		"csv":   "day,at\n14.07.2026,1784000000123\n",
		"jsonl": `{"day":"14.07.2026","at":1784000000123}` + "\n",
	} {
		s, err := Stdin(format, StdinOptions{Reader: strings.NewReader(in), Header: true, Columns: fields, Times: times}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		got := fmt.Sprint(time.Unix(0, b.Row(0)[0].Time()).UTC(), " ", time.Unix(0, b.Row(0)[1].Time()).UTC())
		if want := "2026-07-13 22:00:00 +0000 UTC 2026-07-14 03:33:20.123 +0000 UTC"; got != want {
			t.Errorf("%s: %s, want %s", format, got, want)
		}
		s.Close()
	}
}
