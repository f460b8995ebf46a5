package ops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"streamd/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var flights = core.MustSchema(
	core.Field{Name: "carrier", Type: core.String},
	core.Field{Name: "origin", Type: core.String},
	core.Field{Name: "delay", Type: core.Int64},
	core.Field{Name: "distance", Type: core.Float64},
)

type flight struct {
	carrier, origin string
	delay           int64
	distance        float64
}

// meta is a record's metadata; test batches set it to recognisable values
// so that tests can check it survives an operator.
type meta struct {
	Seq, Hash uint64
	Time, Pos int64
}

func metaOf(i int) meta {
	return meta{Seq: uint64(1000 + i), Hash: uint64(i)*0x9e3779b97f4a7c15 + 1, Time: int64(i) * 1e9, Pos: int64(i + 2)}
}

func flightBatch(fs []flight) *core.Batch {
	b := core.NewBatch(flights)
	for i, f := range fs {
		m := metaOf(i)
		row := b.Append(m.Seq, m.Hash, m.Time, m.Pos)
		row[0], row[1] = core.StringValue(f.carrier), core.StringValue(f.origin)
		row[2], row[3] = core.IntValue(f.delay), core.FloatValue(f.distance)
	}
	return b
}

var someFlights = []flight{
	{"AA", "ORD", 17, 733}, {"DL", "ATL", -3, 1200.5}, {"UA", "SFO", 45, 2565},
	{"AA", "JFK", 0, 2475}, {"WN", "DBN", 16, 198}, {"B6", "XXX", 15, 100},
}

// record is one output record, copied out of its batch.
type record struct {
	meta
	vals []core.Value
}

// run pushes batches through the operator in a core.Chain, then the End
// marker, closes the instance, and returns the output records. Output
// batches are released.
func run(t *testing.T, def core.OperatorDef, env core.Env, batches ...*core.Batch) ([]record, error) {
	t.Helper()
	op, err := def.New(env)
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	final := func(b *core.Batch) error {
		if b.Kind == core.Data {
			if b.Schema.Width() != def.Out.Width() {
				t.Errorf("output batch of width %d, schema %s", b.Schema.Width(), def.Out)
			}
			for i := range b.Len {
				out = append(out, record{meta{b.Seq[i], b.Hash[i], b.Time[i], b.Pos[i]}, append([]core.Value(nil), b.Row(i)...)})
			}
		}
		b.Release()
		return nil
	}
	if cl, ok := op.(core.Closer); ok {
		defer cl.Close() // the lifecycle's close, on every exit
	}
	c := core.NewChain([]core.Operator{op}, []*core.Schema{def.Out}, []*core.Counters{{}}, final)
	for _, b := range batches {
		if err := c.Push(b); err != nil {
			return out, err
		}
	}
	end := core.NewMarker(core.End)
	return out, c.Push(end)
}

func checkMeta(t *testing.T, got record, i int) {
	t.Helper()
	if got.meta != metaOf(i) {
		t.Errorf("record from input %d has metadata %+v, want %+v", i, got.meta, metaOf(i))
	}
}

func policyFor(t *testing.T, mode core.ErrorMode) (*core.ErrorPolicy, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	p, err := core.NewErrorPolicy(mode, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}
