package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// logFlags are the global flags that choose which log lines (slog, on
// standard error) a command prints:
//
//	--log-level debug|info|warn|error   (default warn)
//	-v, --verbose                       (--log-level info)
//
// The default shows only what the user should act on (warnings and
// errors). Where the stages run (the usable CPU set, the cgroup quota,
// pinned or not: running unpinned on a machine with fewer cores than
// stages is normal), each elastic period, rebalance plan, reconfiguration
// and checkpoint are info lines; debug shows everything (no line is below
// info today).
// The run's report, its status lines and its notes to the user (which
// checkpoint a restore resumes from, the control endpoint's address) are
// not log lines: --quiet, not the level, turns them off.
type logFlags struct {
	level   string
	verbose bool
}

// logLevels are the names --log-level takes, in slog's order.
var logLevels = []string{"debug", "info", "warn", "error"}

func (lf *logFlags) register(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&lf.level, "log-level", "warn", "which log lines to print on standard error: "+strings.Join(logLevels, ", ")+" (each with those after it)")
	pf.BoolVarP(&lf.verbose, "verbose", "v", false, "print info log lines too (--log-level info): where the stages run, checkpoints, reconfigurations")
}

// Level is the level cmd's flags chose, and whether they chose one
// (--log-level or -v given) rather than leaving the default. -v with a
// --log-level other than info is a usage error.
func (lf *logFlags) Level(cmd *cobra.Command) (level slog.Level, chosen bool, err error) {
	explicit := cmd.Flags().Changed("log-level")
	if !validLevel(lf.level) || level.UnmarshalText([]byte(lf.level)) != nil {
		return 0, false, usageErr(fmt.Errorf("--log-level %q: expected one of %s", lf.level, strings.Join(logLevels, ", ")))
	}
	if lf.verbose {
		if explicit && level != slog.LevelInfo {
			return 0, false, usageErr(fmt.Errorf("-v (--log-level info) and --log-level %s: give one of them", lf.level))
		}
		return slog.LevelInfo, true, nil
	}
	return level, explicit, nil
}

func validLevel(s string) bool {
	for _, l := range logLevels {
		if strings.EqualFold(s, l) {
			return true
		}
	}
	return false
}

// newLogger returns the text logger of a command: lines at level and above
// go to w.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
