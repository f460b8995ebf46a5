package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"streamd/snapshot"
)

func newCheckpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List and inspect checkpoints",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list <dir>",
		Short: "List the checkpoints of a checkpoint directory, newest first, with their verification status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := snapshot.View(args[0], nil).List()
			if err != nil {
				return jobErr(err)
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
				fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\t%d\tok\n", c.ID, c.Meta.Time.Format("2006-01-02T15:04:05.000Z"),
					c.Meta.Sources["source"], c.Meta.Channels, len(c.Meta.Files), bytes)
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "inspect <checkpoint-dir>",
		Short: "Show a checkpoint's metadata, files, sizes and checksum status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := snapshot.Load(args[0], nil)
			if err != nil {
				return jobErr(err)
			}
			inspect(cmd.OutOrStdout(), c)
			return nil
		},
	})
	return cmd
}

func inspect(w io.Writer, c *snapshot.Checkpoint) {
	m := c.Meta
	fmt.Fprintf(w, "checkpoint %d (format %d) at %s: checksums ok\n", m.ID, m.Version, m.Time.Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(w, "channels %d, key groups %d, watermark %d\n", m.Channels, m.KeyGroups, m.Watermark)
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
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tBYTES\tCRC32C")
	for _, f := range m.Files {
		fmt.Fprintf(tw, "%s\t%d\t%08x\n", f.Name, f.Size, f.CRC32C)
	}
	tw.Flush()
}
