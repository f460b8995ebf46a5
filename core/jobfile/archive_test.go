package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archive is a test file of named sections, each opened by a "-- name --"
// line (the txtar layout); the text before the first is a comment.
type archive struct {
	comment  string
	sections []section
}

type section struct {
	name, text string
}

func readArchive(t *testing.T, file string) *archive {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a := &archive{}
	cur := &a.comment
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			a.sections = append(a.sections, section{name: strings.TrimSuffix(name, " --")})
			cur = &a.sections[len(a.sections)-1].text
			continue
		}
		*cur += line
	}
	return a
}

func (a *archive) get(name string) (string, bool) {
	for _, s := range a.sections {
		if s.name == name {
			return s.text, true
		}
	}
	return "", false
}

func (a *archive) set(name, text string) {
	for i := range a.sections {
		if a.sections[i].name == name {
			a.sections[i].text = text
			return
		}
	}
	a.sections = append(a.sections, section{name: name, text: text})
}

func (a *archive) write(t *testing.T, file string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(a.comment)
	for _, s := range a.sections {
		b.WriteString("-- " + s.name + " --\n" + s.text)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// extract writes every section but those named in skip into dir.
func (a *archive) extract(t *testing.T, dir string, skip ...string) {
	t.Helper()
next:
	for _, s := range a.sections {
		for _, k := range skip {
			if s.name == k {
				continue next
			}
		}
		p := filepath.Join(dir, s.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
