package main

import (
	"path/filepath"
	"strings"
	"testing"

	"streamd/core"
	"streamd/core/plan"
	"streamd/snapshot"
)

// checkpoints inspect takes a checkpoint's path, or the checkpoint
// directory and the checkpoint's name or number in it, as checkpoints list
// shows them.
func TestCheckpointsInspectDirAndID(t *testing.T) {
	_, ck := checkpointJob(t, 2, 4)
	for _, id := range []string{snapshot.Name(4), "4", "chk-4", "0004", "chk-0004"} {
		code, out, stderr := cli(t, "checkpoints", "inspect", ck, id)
		if code != 0 || !strings.HasPrefix(out, "checkpoint 4 ") || !strings.Contains(out, "source source: position 4\n") || stderr != "" {
			t.Errorf("inspect %s %s: exit %d, stdout %q, stderr %q", ck, id, code, out, stderr)
		}
	}
	// The older one, by number, is that one, not the newest.
	if code, out, _ := cli(t, "checkpoints", "inspect", ck, "2"); code != 0 || !strings.HasPrefix(out, "checkpoint 2 ") {
		t.Errorf("inspect %s 2: exit %d, %q", ck, code, out)
	}
	// The path still works.
	if code, out, _ := cli(t, "checkpoints", "inspect", filepath.Join(ck, snapshot.Name(4))); code != 0 || !strings.HasPrefix(out, "checkpoint 4 ") {
		t.Errorf("inspect by path: exit %d, %q", code, out)
	}
}

func TestCheckpointsInspectUsage(t *testing.T) {
	_, ck := checkpointJob(t, 2, 4)
	t.Chdir(filepath.Dir(ck))
	name := snapshot.Name(4)
	missing := filepath.Join(ck, "nope")
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bare name not here", []string{name},
			"streamd: checkpoints inspect: no checkpoint " + name + " here; give its path (DIR/" + name + ") or streamd checkpoints inspect DIR " + name + "\n"},
		{"bare number", []string{"4"},
			"streamd: checkpoints inspect: no checkpoint 4 here; give its path (DIR/4) or streamd checkpoints inspect DIR 4\n"},
		{"id not in the directory", []string{ck, "3"},
			"streamd: checkpoints inspect: no checkpoint " + snapshot.Name(3) + " in " + ck + " (streamd checkpoints list " + ck + " lists them)\n"},
		{"not an id", []string{ck, "latest"},
			"streamd: checkpoints inspect: \"latest\" is not a checkpoint name or number (expected " + snapshot.Name(4) + " or 4, as streamd checkpoints list " + ck + " shows)\n"},
		{"missing directory", []string{missing, "4"},
			"streamd: checkpoints inspect: " + missing + " does not exist\n"},
		{"a checkpoint as the directory", []string{filepath.Join(ck, name), "4"},
			"streamd: checkpoints inspect: no checkpoint " + name + " in " + filepath.Join(ck, name) + " (streamd checkpoints list " + filepath.Join(ck, name) + " lists them)\n"},
		{"three arguments", []string{ck, "4", "5"}, "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cli(t, append([]string{"checkpoints", "inspect"}, c.args...)...)
			want, prefix := strings.CutSuffix(c.stderr, "…")
			if code != 2 || (!prefix && stderr != want) || (prefix && !strings.HasPrefix(stderr, want)) {
				t.Errorf("inspect %v: exit %d, stderr %q; want 2, %q", c.args, code, stderr, c.stderr)
			}
		})
	}
	// Relative to the working directory, the bare name of the directory
	// and the checkpoint's relative path both work.
	if code, out, _ := cli(t, "checkpoints", "inspect", "ck", "4"); code != 0 || !strings.HasPrefix(out, "checkpoint 4 ") {
		t.Errorf("inspect ck 4: exit %d, %q", code, out)
	}
	if code, out, _ := cli(t, "checkpoints", "inspect", filepath.Join("ck", name)); code != 0 || !strings.HasPrefix(out, "checkpoint 4 ") {
		t.Errorf("inspect ck/%s: exit %d, %q", name, code, out)
	}
}

// inspect lists the sink's committed output parts a checkpoint recorded.
func TestCheckpointsInspectOutputParts(t *testing.T) {
	_, ck := checkpointJob(t)
	store, err := snapshot.Open(ck, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := store.Begin(3)
	if err := w.WriteParts(core.OutputManifestFile, [][]byte{[]byte("1 120 0000abcd\n3 7 12345678\n")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(snapshot.Metadata{Sources: map[string]int64{"source": 9}, Watermark: 1767225600_000000000}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, "checkpoints", "inspect", ck, "3")
	if !strings.Contains(out, "watermark 2026-01-01T00:00:00Z (1767225600000000000 ns)\n") {
		t.Errorf("watermark line:\n%s", out)
	}
	if code != 0 || !strings.Contains(out, "OUTPUT PART (EPOCH)  BYTES  CRC32C\n1                    120    0000abcd\n3                    7      12345678\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// inspect shows the control-plane updates a checkpoint recorded (extra
// "updates"), which a restore from it applies again.
func TestCheckpointsInspectUpdates(t *testing.T) {
	_, ck := checkpointJob(t)
	store, err := snapshot.Open(ck, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := store.Begin(3)
	updates := `[{"operator":"keep","body":"filter: value < 500"},{"operator":"win","body":"window:\n  size: 1s\n  allowed_lateness: 2s\n"}]`
	if err := w.Commit(snapshot.Metadata{Sources: map[string]int64{"source": 9}, Extra: map[string]string{plan.UpdatesExtra: updates}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, "checkpoints", "inspect", ck, "3")
	want := "updates applied again on restore:\n" +
		"  keep: filter: value < 500\n" +
		"  win:\n" +
		"    window:\n" +
		"      size: 1s\n" +
		"      allowed_lateness: 2s\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d; want\n%s\nin\n%s", code, want, out)
	}
}
