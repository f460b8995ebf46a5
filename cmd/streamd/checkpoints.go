package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"streamd/core"
	"streamd/core/plan"
	"streamd/snapshot"
)

func newCheckpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List and inspect checkpoints",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.Help()
			if len(args) > 0 {
				return usageErr(fmt.Errorf("checkpoints: unknown command %q (expected list or inspect)", args[0]))
			}
			return usageErr(errors.New("checkpoints: no command given (expected list or inspect)"))
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list <dir>",
		Short: "List the checkpoints of a checkpoint directory, newest first, with their verification status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := isDir(dir); err != nil {
				return usageErr(fmt.Errorf("checkpoints list: %w", err))
			}
			if _, err := os.Stat(filepath.Join(dir, snapshot.MetadataFile)); err == nil {
				return usageErr(fmt.Errorf("checkpoints list: %s is a checkpoint, not a checkpoint directory: use streamd checkpoints inspect %s, or list its parent", dir, dir))
			}
			list, err := snapshot.View(dir, nil).List()
			if err != nil {
				return jobErr(err)
			}
			if len(list) == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "no checkpoints in %s\n", dir)
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTIME\tPOSITION\tCHANNELS\tFILES\tBYTES\tSTATUS")
			for _, c := range list {
				if c.Err != nil {
					fmt.Fprintf(w, "%d\t-\t-\t-\t-\t-\t%v\n", c.ID, c.Err)
					continue
				}
				var bytes int64
				for _, f := range c.Meta.Files {
					bytes += f.Size
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%d\t%d\tok\n", c.ID, c.Meta.Time.Format("2006-01-02T15:04:05.000Z"),
					plan.PositionText(c.Meta.Sources), c.Meta.Channels, len(c.Meta.Files), bytes)
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "inspect <dir>/<checkpoint> | inspect <dir> <checkpoint>",
		Short: "Show a checkpoint's metadata, files, sizes and checksum status",
		Long: `Show a checkpoint's metadata, files, sizes and checksum status. The
checkpoint is its path (ck/chk-000000000004), or a checkpoint directory and
the checkpoint's name or number in it (ck chk-000000000004, ck 4, ck chk-4).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := inspectPath(args)
			if err != nil {
				return usageErr(err)
			}
			if err := checkpointArg("checkpoints inspect", path); err != nil {
				return usageErr(err)
			}
			c, err := snapshot.Load(path, nil)
			if err != nil {
				return jobErr(err)
			}
			inspect(cmd.OutOrStdout(), c)
			return nil
		},
	})
	return cmd
}

// inspectPath is the checkpoint path that checkpoints inspect's arguments
// name: a path, or a checkpoint directory and a checkpoint in it by name
// (chk-000000000004) or number (4, chk-4).
func inspectPath(args []string) (string, error) {
	const what = "checkpoints inspect"
	if len(args) == 1 {
		p := args[0]
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && !strings.ContainsRune(p, filepath.Separator) && p != "." && p != ".." {
			return "", fmt.Errorf("%s: no checkpoint %s here; give its path (DIR/%s) or streamd checkpoints inspect DIR %s", what, p, p, p)
		}
		return p, nil
	}
	dir, name := args[0], args[1]
	if err := isDir(dir); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	id, err := strconv.ParseUint(strings.TrimPrefix(name, "chk-"), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%s: %q is not a checkpoint name or number (expected %s or %d, as streamd checkpoints list %s shows)",
			what, name, snapshot.Name(4), 4, dir)
	}
	path := filepath.Join(dir, snapshot.Name(id))
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: no checkpoint %s in %s (streamd checkpoints list %s lists them)", what, snapshot.Name(id), dir, dir)
	}
	return path, nil
}

// isDir returns an error saying what dir is when it is not a directory.
func isDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist", dir)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// checkpointArg checks that dir, given to what (--restore, checkpoints
// inspect), is one checkpoint (a chk-… directory with a _metadata file),
// and says what it is otherwise: missing, a file, the checkpoint directory
// above the checkpoints (then naming its newest entry), or another
// directory. A checkpoint that is there but fails verification is not
// refused here: loading it reports the corruption.
func checkpointArg(what, dir string) error {
	if err := isDir(dir); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshot.MetadataFile)); err == nil {
		return nil
	}
	if n, err := snapshot.View(dir, nil).Count(); err == nil && n > 0 {
		newest := ""
		entries, _ := os.ReadDir(dir) // sorted by name: chk-<zero-padded id>
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "chk-") {
				newest = filepath.Join(dir, e.Name())
			}
		}
		return fmt.Errorf("%s: %s is a checkpoint directory holding %d checkpoint(s), not one checkpoint: pass one of its chk-… entries (the newest is %s), or see streamd checkpoints list %s",
			what, dir, n, newest, dir)
	}
	return fmt.Errorf("%s: %s is not a checkpoint (it has no %s file)", what, dir, snapshot.MetadataFile)
}

func inspect(w io.Writer, c *snapshot.Checkpoint) {
	m := c.Meta
	fmt.Fprintf(w, "checkpoint %d (format %d) at %s: checksums ok\n", m.ID, m.Version, m.Time.Format("2006-01-02T15:04:05.000Z"))
	wm := "none"
	if m.Watermark != core.NoTime {
		wm = fmt.Sprintf("%s (%d ns)", time.Unix(0, m.Watermark).UTC().Format(time.RFC3339Nano), m.Watermark)
	}
	fmt.Fprintf(w, "channels %d, key groups %d, watermark %s\n", m.Channels, m.KeyGroups, wm)
	names := make([]string, 0, len(m.Sources))
	for n := range m.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "source %s: position %d\n", n, m.Sources[n])
	}
	for i, op := range m.Operators {
		fmt.Fprintf(w, "operator %d: %s\n", i, op)
	}
	inspectUpdates(w, &m)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tBYTES\tCRC32C")
	for _, f := range m.Files {
		fmt.Fprintf(tw, "%s\t%d\t%08x\n", f.Name, f.Size, f.CRC32C)
	}
	tw.Flush()
	// The sink's committed output parts, as a restore will check them.
	for _, f := range m.Files {
		if f.Name != core.OutputManifestFile {
			continue
		}
		data, err := c.ReadFile(f.Name)
		if err != nil {
			fmt.Fprintf(w, "committed output: %v\n", err)
			return
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OUTPUT PART (EPOCH)\tBYTES\tCRC32C")
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f[0], f[1], f[2])
			}
		}
		tw.Flush()
	}
}

// inspectUpdates shows the control-plane updates a checkpoint recorded
// (plan.UpdatesExtra), which a restore from it builds again: each
// operator and its entry as the update gave it, a body of several lines
// indented below the operator's name. Nothing when there are none.
func inspectUpdates(w io.Writer, m *snapshot.Metadata) {
	us, err := plan.RestoredUpdates(m)
	if err != nil {
		fmt.Fprintf(w, "updates: %v\n", err)
		return
	}
	if len(us) == 0 {
		return
	}
	fmt.Fprintln(w, "updates applied again on restore:")
	for _, u := range us {
		body := strings.TrimRight(u.Body, "\n")
		if !strings.Contains(body, "\n") {
			fmt.Fprintf(w, "  %s: %s\n", u.Operator, body)
			continue
		}
		fmt.Fprintf(w, "  %s:\n", u.Operator)
		for _, line := range strings.Split(body, "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}
