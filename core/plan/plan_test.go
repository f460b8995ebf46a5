package plan_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/plan"
	"streamd/internal/deps"
)

// The description is data: it imports no runtime machinery (core/runtime
// and its packages, rings, scheduling), starts no goroutine and reads no
// clock.
func TestPlainData(t *testing.T) {
	ds, err := deps.Of(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		for _, bad := range []string{"streamd/core/runtime", "streamd/ring", "streamd/sched"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("core/plan depends on %s", d)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a go statement", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Sleep") {
					t.Errorf("%s: time.%s", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}

// Validate refuses a job that cannot run, naming the job.
func TestValidate(t *testing.T) {
	src, out := struct{ core.Source }{}, struct{ core.Sink }{} // only present, never called
	for _, c := range []struct {
		job  plan.Job
		want string // "" = valid
	}{
		{plan.Job{Name: "ok", Source: src, Sink: out}, ""},
		{plan.Job{Name: "ok", Source: src, Sink: out, Region: &plan.Region{Channels: 3}}, ""},
		{plan.Job{Name: "a", Sink: out}, `job "a": no source`},
		{plan.Job{Name: "b", Source: src}, `job "b": no sink`},
		{plan.Job{Name: "c", Source: src, Sink: out, Region: &plan.Region{}}, `job "c": a region needs at least 1 channel, not 0`},
	} {
		err := c.job.Validate()
		if (err == nil) != (c.want == "") || err != nil && err.Error() != c.want {
			t.Errorf("%s: Validate() = %v, want %q", c.job.Name, err, c.want)
		}
	}
}

// RegionOrderKept: a window's order (end, then key) survives the
// operators after it in the region only when each keeps both fields; the
// index names the first that does not.
func TestRegionOrderKept(t *testing.T) {
	win := core.OperatorDef{Name: "win", OrderBy: []core.OrderField{{Index: 1}, {Index: 0}},
		Order: func(a, b []core.Value) int { return 0 }}
	filter := core.OperatorDef{Name: "filter", Keep: core.KeepAll(2)}
	swap := core.OperatorDef{Name: "swap", Keep: []int{1, 0}}
	drop := core.OperatorDef{Name: "drop end", Keep: []int{0, -1}}
	built := core.OperatorDef{Name: "aggregate"} // Keep nil: records of its own
	for _, c := range []struct {
		ops []core.OperatorDef
		ok  bool
		at  int
	}{
		{nil, true, -1},
		{[]core.OperatorDef{filter, built}, true, -1}, // no order to keep
		{[]core.OperatorDef{win}, true, -1},
		{[]core.OperatorDef{filter, win, filter, swap}, true, -1},
		{[]core.OperatorDef{win, filter, drop}, false, 2},
		{[]core.OperatorDef{win, built, filter}, false, 1},
	} {
		if ok, at := plan.RegionOrderKept(c.ops); ok != c.ok || at != c.at {
			t.Errorf("%d ops: RegionOrderKept = %v, %d, want %v, %d", len(c.ops), ok, at, c.ok, c.at)
		}
	}
}
