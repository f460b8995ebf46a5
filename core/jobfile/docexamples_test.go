package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every whole job in docs/JOB.md (a yaml block with source: and sink:)
// decodes: no unknown key, no value of the wrong type, no misspelt kind —
// the reference does not drift from the loader.
func TestJobDocExamplesLoad(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "JOB.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range strings.Split(string(doc), "```yaml\n")[1:] {
		body := p[:strings.Index(p, "```")]
		if !strings.Contains("\n"+body, "\nsource:") || !strings.Contains("\n"+body, "\nsink:") {
			continue
		}
		n++
		path := filepath.Join(t.TempDir(), "job.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Errorf("docs/JOB.md example %d does not load: %v\n%s", n, err, body)
		}
	}
	if n < 15 {
		t.Fatalf("found %d whole jobs in docs/JOB.md; expected at least 15", n)
	}
}
