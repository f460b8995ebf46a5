package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"streamd/core/jobfile"
	"streamd/core/runtime"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate job.yaml",
		Short: "Check a job file: keys, types, fields, expressions, inputs",
		Args:  oneArg("validate: expected a job file (streamd validate JOB.yaml)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := jobfile.Load(args[0])
			if err != nil {
				return usageErr(err)
			}
			// Validate changes nothing on disk (checkpoint.dir is only
			// read); notes about it go to standard error.
			job, err := f.Build(jobfile.Options{Validate: true, Cores: runtime.UsableCores(),
				Warn: func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "streamd: note:", msg) }})
			if err != nil {
				return usageErr(err)
			}
			job.Source.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n%s\n", args[0], f.Promise())
			if d := f.Delivery(); d != "" {
				fmt.Fprintln(cmd.OutOrStdout(), d)
			}
			return nil
		},
	}
}
