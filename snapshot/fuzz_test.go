package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad: checkpoint metadata of any content (with a valid checksum, so
// the fuzzer gets past it) loads or is reported corrupt, never panics, and
// a checkpoint that loads names only files inside its directory.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":3,"files":[]}`))
	f.Add([]byte(`{"version":1,"id":3,"files":[{"name":"op-0","size":3,"crc32c":1}]}`))
	f.Add([]byte(`{"version":1,"id":3,"files":[{"name":"../x","size":0,"crc32c":0}]}`))
	f.Add([]byte(`{"version":1,"sources":{"block":4},"extra":{"max_event_time":"7"},"files":null}`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		if len(meta) > 4096 || !json.Valid(meta) {
			return
		}
		dir := t.TempDir()
		env, err := json.Marshal(envelope{CRC32C: Checksum(meta), Meta: meta})
		if err != nil {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, MetadataFile), env, 0o644); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "op-0"), []byte("abc"), 0o644)
		c, err := Load(dir, nil)
		if err != nil {
			return
		}
		for _, fi := range c.Meta.Files {
			if strings.ContainsAny(fi.Name, `/\`) || fi.Name == ".." || fi.Name == "." {
				t.Fatalf("loaded a checkpoint naming %q", fi.Name)
			}
		}
	})
}
