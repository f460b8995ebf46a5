package jobfile

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any bytes as job.yaml give a File or an error, never a panic
// (a YAML tag where a list is expected once panicked the decoder). Seeds:
// the examples and the scripted error cases. scripts/fuzz.sh fuzzes it.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../../examples/*/job.yaml", "testdata/errors/*.txt"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("pipeline: !x\n"))
	f.Add([]byte("region: {ops: [{window: {size: 1h, aggregates: {n: count}}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8192 {
			return
		}
		Parse("fuzz.yaml", data) // a panic fails the fuzz run
	})
}
