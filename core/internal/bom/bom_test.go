package bom

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReader drops the mark however the input arrives, passes every
// other byte and the input's error on, and reads nothing before its first
// Read.
func TestReader(t *testing.T) {
	for _, in := range []string{"", "\xEF", "\xEF\xBB", "\uFEFF", "\uFEFFa", "\uFEFF\uFEFF", "\xEF\xBBa", "\xEFa", "abc", "abcd", "a\uFEFF"} {
		want := strings.TrimPrefix(in, "\uFEFF")
		for name, r := range map[string]func() io.Reader{
			"whole":     func() io.Reader { return strings.NewReader(in) },
			"one byte":  func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
			"data+EOF":  func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
			"half":      func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
			"two empty": func() io.Reader { return io.MultiReader(strings.NewReader(""), strings.NewReader(in)) },
		} {
			got, err := io.ReadAll(NewReader(r()))
			if err != nil || string(got) != want {
				t.Errorf("%q, %s: %q, %v; want %q", in, name, got, err, want)
			}
		}
		if err := iotest.TestReader(NewReader(strings.NewReader(in)), []byte(want)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	boom := errors.New("boom")
	got, err := io.ReadAll(NewReader(io.MultiReader(strings.NewReader("\xEF"), iotest.ErrReader(boom))))
	if string(got) != "\xEF" || err != boom {
		t.Errorf("error after one byte: %q, %v", got, err)
	}
	NewReader(iotest.ErrReader(boom)) // reads nothing yet: no panic, no block
}
