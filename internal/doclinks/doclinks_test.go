package doclinks

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// citation is a citation that starts at a document's name: the name, then
// its file name's ".md" or not, then a quoted section title. Group 1 is the
// name, group 2 ".md", group 3 the title. A regular expression run over
// every file is slow (an NFA over 4 MB); this one runs only where a name
// occurs.
var citation = regexp.MustCompile(
	`^(ARCHITECTURE|PERFORMANCE-LOG|PERFORMANCE|JOB|RELIABILITY|CONTROL)(\.md)?` +
		`(?:'s)?[ ,:(]+(?:sections?\s+)?["“]([^"”]{1,160})["”]`)

// names start a citation.
var names = []string{"ARCHITECTURE", "PERFORMANCE", "JOB", "RELIABILITY", "CONTROL"}

// more continues a citation with a further title: docs/X.md, "A", "B" or
// "A" and "B".
var more = regexp.MustCompile(`^\s*(?:,|and|or|;)\s*(?:then\s+)?["“]([^"”]{1,160})["”]`)

// anchorLink finds Markdown links to a heading: [text](#anchor) or
// [text](FILE.md#anchor).
var anchorLink = regexp.MustCompile(`\]\(((?:[\w./-]*\.md)?)#([^)\s]+)\)`)

// within finds a document's references to its own sections: ("Title")
// after a space, or "Title" below / above, the title capitalised. Group 1
// or 2 is the title. Code spans are blanked out before it runs.
var within = regexp.MustCompile(`(?:^|[ \[])\("([A-Z][^"]{2,120})"\)|"([A-Z][^"]{2,120})" (?:below|above)`)

// codeSpan is inline code in Markdown.
var codeSpan = regexp.MustCompile("`[^`]*`")

// dated is the date that begins a heading of the log ("2026-12-01 (third
// session): "); a citation may leave it out.
var dated = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[^:]*:\s*`)

// bareNames may be cited without ".md": capitalised, they are not words a
// usage line would use (JOB and CONTROL are: "crashloop.sh JOB OUTPUT").
var bareNames = map[string]bool{"ARCHITECTURE": true, "PERFORMANCE": true, "PERFORMANCE-LOG": true, "RELIABILITY": true}

// outside are references to files that live beside the repository, not in
// it; written in pieces so that this file does not match itself.
var outside = []string{"ISSUE-" + "NOTES", "shared/" + "DESIGN", "shared/" + "STYLE"}

// skipDirs are never scanned: version control, build outputs and scratch
// directories of the ignore rules.
var skipDirs = map[string]bool{".git": true, ".dev": true, "bin": true, "out": true, "bench-out": true, "tmp": true, "node_modules": true}

// root is the repository: the first directory above the test's with go.mod.
func root(t *testing.T) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			t.Fatal("no go.mod above the test's directory")
		}
		d = up
	}
}

// doc is one document under docs/: its headings, normalised, and the
// anchors GitHub derives from them.
type doc struct {
	headings []string
	anchors  map[string]bool
}

func loadDocs(t *testing.T, dir string) map[string]*doc {
	t.Helper()
	docs := map[string]*doc{}
	names, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		d := &doc{anchors: map[string]bool{}}
		fence := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if fence || !strings.HasPrefix(line, "#") {
				continue
			}
			h := strings.TrimSpace(strings.TrimLeft(line, "#"))
			d.headings = append(d.headings, normal(h))
			if m := dated.FindStringIndex(h); m != nil {
				d.headings = append(d.headings, normal(h[m[1]:]))
			}
			a := anchor(h)
			for n := 1; d.anchors[a]; n++ { // GitHub numbers repeated anchors
				a = fmt.Sprintf("%s-%d", anchor(h), n)
			}
			d.anchors[a] = true
		}
		docs[filepath.Base(name)] = d
	}
	return docs
}

// normal lowers case, drops backquotes and folds runs of spaces, so that a
// title wrapped over two comment lines still matches.
func normal(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, "`", ""))
	return strings.Join(strings.Fields(s), " ")
}

// anchor is GitHub's anchor of a heading: lower case, spaces to hyphens,
// everything but letters, digits, marks, hyphens and underscores dropped.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// has reports whether a heading of d begins with the cited title.
func (d *doc) has(title string) bool {
	t := normal(strings.TrimRight(strings.TrimSpace(title), ".…"))
	if t == "" {
		return false
	}
	for _, h := range d.headings {
		if strings.HasPrefix(h, t) {
			return true
		}
	}
	return false
}

// text is a file's prose with comment markers removed and its lines joined
// by spaces, and the offset at which each line starts.
func text(name string, b []byte) (string, []int) {
	var marker string
	switch filepath.Ext(name) {
	case ".go":
		marker = "//"
	case ".sh", ".yaml", ".yml":
		marker = "#"
	}
	var s strings.Builder
	var starts []int
	for _, line := range strings.Split(string(b), "\n") {
		starts = append(starts, s.Len())
		line = strings.TrimSpace(line)
		if marker != "" {
			line = strings.TrimLeft(line, marker)
		}
		s.WriteString(line)
		s.WriteByte(' ')
	}
	return s.String(), starts
}

func lineOf(starts []int, off int) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i] > off })
}

// file is a text file of the repository: its path relative to the root and
// its bytes.
type file struct {
	rel string
	b   []byte
}

// files lists the repository's text files: those without a NUL byte in
// their first 8000 bytes, outside skipDirs. Both tests read the same list;
// it is read once.
func files(t *testing.T, repo string) []file {
	t.Helper()
	if read != nil {
		return read
	}
	var out []file
	head := make([]byte, 8000)
	err := filepath.WalkDir(repo, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if skipDirs[e.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if e.Name() == ".git" || !e.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, _ := io.ReadFull(f, head)
		if bytes.IndexByte(head[:n], 0) >= 0 {
			return nil // a binary file
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, path)
		out = append(out, file{filepath.ToSlash(rel), b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read = out
	return out
}

// read is what files read (the tests run one at a time).
var read []file

// cited is one citation: where it stands, the document and the title.
type cited struct {
	rel   string
	line  int
	doc   string
	title string
}

// citations finds every citation in f.
func citations(f file) []cited {
	s, starts := text(f.rel, f.b)
	var at []int
	for _, name := range names {
		for i := 0; ; {
			k := strings.Index(s[i:], name)
			if k < 0 {
				break
			}
			at = append(at, i+k)
			i += k + len(name)
		}
	}
	sort.Ints(at)
	var out []cited
	for _, i := range at {
		if i > 0 && isWord(s[i-1]) {
			continue // STREAMD_CONTROL_TOKEN
		}
		w := s[i:min(len(s), i+400)]
		m := citation.FindStringSubmatchIndex(w)
		if m == nil {
			continue
		}
		name := w[m[2]:m[3]]
		if m[4] < 0 && !bareNames[name] {
			continue
		}
		line := lineOf(starts, i)
		out = append(out, cited{f.rel, line, name + ".md", w[m[6]:m[7]]})
		for end := i + m[1]; ; {
			c := more.FindStringSubmatchIndex(s[end:min(len(s), end+200)])
			if c == nil {
				break
			}
			out = append(out, cited{f.rel, line, name + ".md", s[end+c[2] : end+c[3]]})
			end += c[1]
		}
	}
	return out
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// TestCitations checks every citation of a document section in the
// repository's Markdown, Go, shell and YAML files (outside testdata), and
// every anchor link in its Markdown.
func TestCitations(t *testing.T) {
	repo := root(t)
	docs := loadDocs(t, filepath.Join(repo, "docs"))
	n := 0
	for _, f := range files(t, repo) {
		switch path.Ext(f.rel) {
		case ".md", ".go", ".sh", ".yaml", ".yml":
		default:
			continue
		}
		if strings.HasPrefix(f.rel, "testdata/") || strings.Contains(f.rel, "/testdata/") {
			continue
		}
		for _, c := range citations(f) {
			n++
			d := docs[c.doc]
			if d != nil && d.has(c.title) {
				continue
			}
			if d == nil {
				t.Errorf("%s:%d: cites docs/%s, which does not exist", c.rel, c.line, c.doc)
			} else {
				t.Errorf("%s:%d: docs/%s has no heading %q", c.rel, c.line, c.doc, strings.Join(strings.Fields(c.title), " "))
			}
		}
		if path.Ext(f.rel) == ".md" {
			n += checkAnchors(t, f, docs)
		}
		if path.Dir(f.rel) == "docs" && path.Ext(f.rel) == ".md" {
			n += checkWithin(t, f, docs[path.Base(f.rel)])
		}
	}
	if n < 100 {
		t.Errorf("found only %d citations; the patterns no longer match the repository's style", n)
	}
}

// checkAnchors checks f's links to headings of documents under docs/ and
// returns how many it checked. Links within a file outside docs/ are not
// checked (only docs/ is loaded).
func checkAnchors(t *testing.T, f file, docs map[string]*doc) int {
	s, starts := text(f.rel, f.b)
	n := 0
	for _, m := range anchorLink.FindAllStringSubmatchIndex(s, -1) {
		target, a := s[m[2]:m[3]], s[m[4]:m[5]]
		name := path.Base(target)
		if target == "" {
			if path.Dir(f.rel) != "docs" {
				continue
			}
			name = path.Base(f.rel)
		}
		n++
		line := lineOf(starts, m[0])
		d := docs[name]
		if d == nil {
			t.Errorf("%s:%d: links to %s, not a document under docs/", f.rel, line, target)
		} else if !d.anchors[a] {
			t.Errorf("%s:%d: %s has no heading with anchor #%s", f.rel, line, name, a)
		}
	}
	return n
}

// checkWithin checks d's references to its own sections and returns how
// many it checked.
func checkWithin(t *testing.T, f file, d *doc) int {
	s, starts := text(f.rel, f.b)
	s = codeSpan.ReplaceAllStringFunc(s, func(c string) string { return strings.Repeat(" ", len(c)) })
	n := 0
	for _, m := range within.FindAllStringSubmatchIndex(s, -1) {
		if strings.HasSuffix(strings.TrimRight(s[:m[0]+1], " ["), ".md") {
			continue // a citation of another document, checked above
		}
		title := ""
		if m[2] >= 0 {
			title = s[m[2]:m[3]]
		} else {
			title = s[m[4]:m[5]]
		}
		n++
		if !d.has(title) {
			t.Errorf("%s:%d: refers to its own section %q, which it does not have", f.rel, lineOf(starts, m[0]), strings.Join(strings.Fields(title), " "))
		}
	}
	return n
}

// TestSelfContained fails on any reference to the notes and design files
// kept beside the repository: it must stand on its own. The data location
// ../shared/data is the one path outside it that it may name.
func TestSelfContained(t *testing.T) {
	for _, f := range files(t, root(t)) {
		for i, line := range bytes.Split(f.b, []byte("\n")) {
			for _, o := range outside {
				if bytes.Contains(line, []byte(o)) {
					t.Errorf("%s:%d: refers to %s, which is not part of the repository", f.rel, i+1, o)
				}
			}
			for rest := line; ; {
				k := bytes.Index(rest, []byte(up))
				if k < 0 {
					break
				}
				rest = rest[k+len(up):]
				if !bytes.HasPrefix(rest, []byte("data")) {
					t.Errorf("%s:%d: refers to %s%s; of the directory beside the repository only %sdata (the data location) may be named", f.rel, i+1, up, field(rest), up)
				}
			}
		}
	}
}

// up is the directory beside the repository, in pieces so that this file
// does not match itself.
var up = "../" + "shared/"

func field(b []byte) string {
	if i := bytes.IndexAny(b, " \t)\"'`,"); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
