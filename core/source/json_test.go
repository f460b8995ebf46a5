package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
)

// jsonOpeners returns the sequential JSON reader of content (over an
// io.Reader) and block readers of the file with each block size.
func jsonOpeners(t *testing.T, content string, opts JSONOptions, sizes []int64) (c textCase) {
	path := writeFile(t, "in.json", content)
	c.seq = func(errs *core.ErrorPolicy) (core.Source, error) {
		return JSON(path, opts, strings.NewReader(content), errs)
	}
	for _, size := range sizes {
		c.blocks = append(c.blocks, func(errs *core.ErrorPolicy) (core.Source, error) {
			return jsonSource(path, opts, nil, errs, size)
		})
	}
	return c
}

var pathFields = []JSONField{
	{Field: core.Field{Name: "k", Type: core.String}, Path: "p.k"},
	{Field: core.Field{Name: "v", Type: core.Int64}, Path: "c[1]"},
}

// An array file and a stream of values with everything that makes value
// starts hard — strings holding brackets, commas, quotes and escaped
// backslashes, values across lines, a value longer than many blocks,
// malformed elements (bad types, a missing path, an empty element, a
// closer too many, text after the array) — read by blocks of every size
// give the sequential reader's records, lines and dead letters.
func TestJSONBlocksSameAsSequential(t *testing.T) {
	long := strings.Repeat("z", 200)
	elems := []string{
		`{"p":{"k":"a"},"c":[0,1]}`,
		"{\"p\":{\"k\":\"b,]}\\\"\\\\\"},\n \"c\":[0,\n2]}",
		`{"p":{"k":"` + long + `"},"c":[9,3]}`,
		`{"p":{"k":"x"},"c":[0,"no"]}`,
		`{"p":"flat","c":[0,4]}`,
		`{"p":{"k":"d"},"c":[0]}`,
		`{"p":{"k":"e"}},"c":[0,5]}`,
		`{"p":{"k":null},"c":[0,6]}`,
		"\n\t{\"c\":[1,7],\"p\":{\"z\":[\"]\"],\"k\":\"f\"}}",
		`[1,2]`,
		`{"p":{"k":"g"},"c":[0,8]}`,
	}
	for _, tc := range []struct {
		name, content string
		format        JSONFormat
	}{
		{"array", "\ufeff[\n" + strings.Join(elems, ",\n") + ",,\n" + elems[0] + "]\n", JSONArray},
		{"array with trailing text", "[" + strings.Join(elems, ",") + "] trailing", JSONArray},
		{"array not closed", "[" + strings.Join(elems, ",") + ",", JSONArray},
		{"array cut in a value", "[" + strings.Join(elems, ",") + `,{"p":{"k":"h`, JSONArray},
		{"values", strings.Join(elems, "\n") + " 17 \"s\" tru {\"p\":{\"k\":\"i\"},\"c\":[0,9]}", JSONValues},
		{"values, no blanks", strings.Join(elems[:3], "") + "}{" + elems[0], JSONValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := JSONOptions{Format: tc.format, Fields: pathFields}
			checkTextBlocks(t, jsonOpeners(t, tc.content, opts, blockSizes))
		})
	}
}

// Explode in every format: the records of an array in each value, with a
// $-field from the value, malformed elements and values among them, read
// by blocks as sequentially.
func TestJSONExplodeBlocksSameAsSequential(t *testing.T) {
	fields := []JSONField{
		{Field: core.Field{Name: "doc", Type: core.String}, Path: "$.name"},
		{Field: core.Field{Name: "k", Type: core.String}},
		{Field: core.Field{Name: "v", Type: core.Int64}, Path: "v"},
	}
	docs := []string{
		`{"name":"d1","items":[{"k":"a","v":1},{"k":"b","v":2}]}`,
		"{\"items\":[\n{\"k\":\"c\",\"v\":3},\n{\"k\":\"bad\",\"v\":\"x\"},\n{\"k\":\"e\",\"v\":5}],\"name\":\"d2\"}",
		`{"name":"d3","items":[]}`,
		`{"name":"d4","items":null}`,
		`{"name":"d5"}`,
		`{"name":"d6","items":{"k":"o"}}`,
		`{"items":[{"k":"f","v":6}]}`,
		`{"name":"d8","items":[{"k":"g","v":7},17,{"k":"h"}]}`,
		`{"name":"d9","items":[{"k":"i","v":8}`,
	}
	for _, tc := range []struct {
		name, content string
		format        JSONFormat
	}{
		{"lines", strings.ReplaceAll(strings.Join(docs, "\n"), "\n{\"k\"", "{\"k\"") + "\n", JSONLines},
		{"array", "[" + strings.Join(docs[:8], ",") + "]", JSONArray},
		{"values", strings.Join(docs, "\n"), JSONValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := JSONOptions{Format: tc.format, Fields: fields, Explode: "items"}
			checkTextBlocks(t, jsonOpeners(t, tc.content, opts, blockSizes))
		})
	}
}

// readAll reads every record of s as "k=… v=… @line" lines, with the
// policy's dead letters counted.
func readAll(t *testing.T, s core.Source) []string {
	t.Helper()
	var out []string
	for {
		b, err := s.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len {
			var sb strings.Builder
			for c, f := range b.Schema.Fields {
				fmt.Fprintf(&sb, "%s=%v ", f.Name, b.Row(i)[c].Any(f.Type))
			}
			fmt.Fprintf(&sb, "@%d", b.Pos[i])
			out = append(out, sb.String())
		}
		b.Release()
	}
}

// GeoJSON as USGS writes it, pretty-printed: paths into properties and
// geometry.coordinates, explode of features, a $-field, and the malformed
// features reported with the line they start on and what was wrong.
func TestJSONGeoJSON(t *testing.T) {
	doc := `{
  "type": "FeatureCollection",
  "metadata": {"title": "USGS \"All\" Earthquakes"},
  "features": [
    {"type": "Feature", "properties": {"mag": 4.5, "place": "A"}, "geometry": {"type": "Point", "coordinates": [-150.1, 61.2, 10]}, "id": "q1"},
    {"type": "Feature", "properties": {"place": "B"}, "geometry": {"type": "Point", "coordinates": [-118, 34, 5.5]}, "id": "q2"},
    {"type": "Feature", "properties": {"mag": "big", "place": "C"}, "geometry": {"type": "Point", "coordinates": [1, 2, 3]}, "id": "q3"},
    {"type": "Feature", "properties": {"mag": 1.25, "place": "D"}, "geometry": {"type": "Point", "coordinates": "none"}, "id": "q4"},
    {"type": "Feature", "properties": {"mag": null, "place": "E"}, "geometry": {"type": "Point", "coordinates": [0, 0, 0]}, "id": "q5"},
    {"type": "Feature", "properties": {"mag": 2, "place": "F"}, "geometry": {"type": "Point", "coordinates": [-70.5, -33.25]}, "id": "q6"},
    {"type": "Feature",
     "properties": {"mag": -0.5, "place": "G"},
     "geometry": {"type": "Point", "coordinates": [179.9, -89.5, 700]}, "id": "q7"}
  ],
  "bbox": [-180, -90, 0, 180, 90, 700]
}
`
	path := writeFile(t, "quakes.json", doc)
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	errs, _ := core.NewErrorPolicy(core.DeadLetter, dead)
	opts := JSONOptions{Explode: "features", Fields: []JSONField{
		{Field: core.Field{Name: "id", Type: core.String}},
		{Field: core.Field{Name: "mag", Type: core.Float64}, Path: "properties.mag"},
		{Field: core.Field{Name: "lon", Type: core.Float64}, Path: "geometry.coordinates[0]"},
		{Field: core.Field{Name: "lat", Type: core.Float64}, Path: "geometry.coordinates[1]"},
		{Field: core.Field{Name: "depth", Type: core.Float64}, Path: "geometry.coordinates[2]"},
		{Field: core.Field{Name: "title", Type: core.String}, Path: "$.metadata.title"},
	}}
	s, err := JSON(path, opts, nil, errs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := readAll(t, s)
	want := []string{
		`id=q1 mag=4.5 lon=-150.1 lat=61.2 depth=10 title=USGS "All" Earthquakes @5`,
		`id=q7 mag=-0.5 lon=179.9 lat=-89.5 depth=700 title=USGS "All" Earthquakes @11`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := errs.DeadLettered.Load(); n != 5 {
		t.Fatalf("%d dead letters, want 5", n)
	}
	// Each malformed feature is a dead letter with the line it starts on
	// and what was wrong.
	data, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, w := range []struct {
		pos    int64
		reason string
	}{
		{6, `field "mag" (properties.mag) is missing`},
		{7, `field "mag": "big" is not a float64`},
		{8, `field "lon" is missing: geometry.coordinates is a string, not an array`},
		{9, `field "mag" is null`},
		{10, `field "depth" (geometry.coordinates[2]) is missing`},
	} {
		var dl struct {
			Pos    int64  `json:"pos"`
			Reason string `json:"reason"`
			Record string `json:"record"`
		}
		if i >= len(lines) || json.Unmarshal([]byte(lines[i]), &dl) != nil || dl.Pos != w.pos || dl.Reason != w.reason ||
			!strings.HasPrefix(dl.Record, `{"type": "Feature"`) || !strings.HasSuffix(dl.Record, `"q`+fmt.Sprint(i+2)+`"}`) {
			t.Fatalf("dead letter %d: %s, want pos %d, reason %s", i, lines[min(i, len(lines)-1)], w.pos, w.reason)
		}
	}
}
