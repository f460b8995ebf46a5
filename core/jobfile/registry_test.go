package jobfile

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The registries list the kinds in the order of their ranks, which is the
// order of the error messages (testdata/errors) and of docs/JOB.md.
func TestRegistryOrder(t *testing.T) {
	for _, c := range []struct {
		got, want []string
	}{
		{opKinds.names(), []string{"filter", "map", "project", "lookup_csv", "lookup_http", "window", "aggregate"}},
		{sourceKinds.names(), []string{"parquet", "csv", "jsonl", "json", "stdin", "generator", "union"}},
		{sinkKinds.names(), []string{"csv", "jsonl", "parquet", "stdout", "discard", "kafka"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("kinds %v, want %v", c.got, c.want)
		}
	}
	if got := yamlKeys(yamlType(reflect.TypeFor[OpSpec]())); !slices.Equal(got, append([]string{"name"}, opKinds.names()...)) {
		t.Errorf("an operator entry's keys are %v", got)
	}
	var keyed []string
	for _, k := range opKinds.all() {
		if k.keyed {
			keyed = append(keyed, k.name)
		}
	}
	if !slices.Equal(keyed, []string{"window", "aggregate"}) {
		t.Errorf("keyed operators %v", keyed)
	}
}

// Adding a kind is its file plus its part of docs/JOB.md: every operator
// and source has a section of its name, every sink an example.
func TestRegistryDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/JOB.md")
	if err != nil {
		t.Fatal(err)
	}
	section := func(title string) string {
		_, after, ok := strings.Cut(string(doc), "\n## "+title+"\n")
		if !ok {
			t.Fatalf("docs/JOB.md has no section %q", title)
		}
		before, _, _ := strings.Cut(after, "\n## ")
		return before
	}
	for _, c := range []struct {
		section string
		names   []string
		want    string // a regexp; NAME is the kind's name
	}{
		{"Operators", opKinds.names(), `\n### NAME\n`},
		{"Sources", sourceKinds.names(), `\n### NAME\n`},
		{"Sinks", sinkKinds.names(), `\nsink:\n  NAME:`},
	} {
		text := section(c.section)
		for _, name := range c.names {
			if !regexp.MustCompile(strings.ReplaceAll(c.want, "NAME", regexp.QuoteMeta(name))).MatchString(text) {
				t.Errorf("docs/JOB.md, %s: nothing on %s", c.section, name)
			}
		}
	}
}

// A registry refuses two kinds of one name or one rank, and kinds added
// after it was first used.
func TestRegistryRefuses(t *testing.T) {
	mustPanic := func(what string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		fn()
	}
	op := func(name string, rank int) *opKind {
		return &opKind{kind: kind{name: name, rank: rank, spec: reflect.TypeFor[*string]()}}
	}
	r := &registry[*opKind]{role: "operator", common: opKinds.common}
	r.add(op("a", 1))
	r.add(op("b", 1))
	mustPanic("same rank", r.seal)
	r = &registry[*opKind]{role: "operator", common: opKinds.common}
	r.add(op("a", 1))
	r.add(op("a", 2))
	mustPanic("same name", r.seal)
	r = &registry[*opKind]{role: "operator", common: opKinds.common}
	r.add(op("name", 1))
	mustPanic("the key name:", r.seal)
	r = &registry[*opKind]{role: "operator", common: opKinds.common}
	r.add(op("a", 1))
	if got := r.names(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("names %v", got)
	}
	mustPanic("added after use", func() { r.add(op("b", 2)) })
	mustPanic("a spec that cannot be nil", func() {
		registerOp(opEntry[string]{name: "scalar", rank: 1000})
	})
}
