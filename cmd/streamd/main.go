// Command streamd runs stream-processing jobs described in YAML.
//
//	streamd run job.yaml [--channels N] [--quiet] [--restore latest|DIR] [flags]
//	streamd validate job.yaml
//	streamd bench WORKLOAD [flags]
//	streamd checkpoints list DIR | inspect CHECKPOINT
//
//	streamd ctl ADDR status | scale N | rebalance | checkpoint | stop [--savepoint] | update OP SPEC | …
//	streamd version | streamd --version
//
// Global flags: --log-level debug|info|warn|error (default warn), -v
// (--log-level info).
//
// Exit codes: 0 success, 1 job failure (including Ctrl-C), 2 usage or
// configuration error, 3 a job stopped at a savepoint (streamd ctl stop
// --savepoint: --restore latest resumes it).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{code: 2, err: err} }

// exitStopped is the exit code of a job stopped at a savepoint.
const exitStopped = 3

func jobErr(err error) error { return &exitError{code: 1, err: err} }

// oneArg is the argument check of a command that takes exactly one
// argument: without it, or with more, the usage error says what it
// expects (with ", not N arguments" when there are more).
func oneArg(expect string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErr(errors.New(expect + notArgs(args)))
		}
		return nil
	}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "streamd:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 2 // cobra's own errors: unknown flag, wrong argument count
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "streamd",
		Short:         "A stream processing engine for one machine with many cores",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var version bool
	root.Flags().BoolVar(&version, "version", false, "print the version (as streamd version does)")
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if version {
			return printVersion(cmd.OutOrStdout())
		}
		cmd.Help()
		return usageErr(errors.New("no command given (expected run, validate, bench, checkpoints, ctl or version)"))
	}
	lf := &logFlags{}
	lf.register(root)
	// Every command refuses a bad --log-level (or -v with another level),
	// also those that log nothing, such as version and validate.
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		_, _, err := lf.Level(cmd)
		return err
	}
	root.AddCommand(newRunCmd(lf), newValidateCmd())
	root.AddCommand(newBenchCmd(lf))
	root.AddCommand(newCheckpointsCmd())
	root.AddCommand(newCtlCmd())
	root.AddCommand(newVersionCmd())
	return root
}
