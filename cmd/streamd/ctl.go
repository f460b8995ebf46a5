package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newCtlCmd is `streamd ctl ADDR COMMAND …`: a client of the control
// endpoint (control.go). It prints the JSON answer and exits 0 when the
// request was carried out, 1 when the job refused it or it failed, 2 for
// a usage error or an unreachable endpoint.
func newCtlCmd() *cobra.Command {
	const long = `Send a command to the control endpoint of a running job (streamd run --control-addr ADDR).
The answer is printed as JSON. Exit code 0: carried out; 1: refused or failed; 2: usage or
the endpoint unreachable. docs/CONTROL.md describes every command.`
	return &cobra.Command{
		Use:                "ctl ADDR COMMAND [ARGS]",
		Short:              "Control a running job (streamd run --control-addr)",
		Long:               long + "\n\nCommands: " + strings.Join(controlCommands, ", ") + " (streamd ctl ADDR COMMAND --help)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// ADDR comes before the command: the first argument that is
			// neither a flag nor a flag's value. The arguments hold the
			// global flags given before ctl too (cobra parses no flag of
			// a command that disables flag parsing): the command tree
			// below parses them all.
			takesValue := ctlValueFlags(long)
			at := -1
			for i := 0; i < len(args) && at < 0; i++ {
				switch a := args[i]; {
				case a == "-h" || a == "--help":
					cmd.Help()
					return nil
				case takesValue[a]:
					i++
				case !strings.HasPrefix(a, "-"):
					at = i
				}
			}
			if at < 0 {
				return usageErr(errors.New("ctl: expected ADDR COMMAND (the job's --control-addr, then one of " + strings.Join(controlCommands, ", ") + ")"))
			}
			if slices.Contains(controlCommands, args[at]) {
				// A command where ADDR belongs: its help if asked for,
				// else say what is missing.
				if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
					sub := ctlCommands("ADDR", long)
					sub.SetArgs([]string{"ctl", "ADDR", args[at], "--help"})
					sub.SetOut(cmd.OutOrStdout())
					return sub.Execute()
				}
				return usageErr(fmt.Errorf("ctl: expected ADDR before %s (the job's --control-addr: streamd ctl ADDR %s …)", args[at], args[at]))
			}
			sub := ctlCommands(args[at], long)
			sub.SetArgs(append(append([]string{"ctl", args[at]}, args[:at]...), args[at+1:]...))
			sub.SetOut(cmd.OutOrStdout())
			sub.SetErr(cmd.ErrOrStderr())
			sub.SetIn(cmd.InOrStdin())
			sub.SilenceErrors, sub.SilenceUsage = true, true
			return sub.Execute()
		},
	}
}

// ctlValueFlags is the set of flags, as written on the command line
// ("--token", "-x"), that the command tree of ctl takes before ADDR and
// that take a value in the next argument: its persistent flags, the
// global ones included.
func ctlValueFlags(long string) map[string]bool {
	top := ctlCommands("ADDR", long)
	root := top.Commands()[0].Commands()[0]
	m := map[string]bool{}
	add := func(f *pflag.Flag) {
		if f.NoOptDefVal != "" {
			return // a boolean: -v, not -v VALUE
		}
		m["--"+f.Name] = true
		if f.Shorthand != "" {
			m["-"+f.Shorthand] = true
		}
	}
	top.PersistentFlags().VisitAll(add)
	root.PersistentFlags().VisitAll(add)
	return m
}

// ctlCommands is the command tree of `streamd ctl ADDR …`, for addr: its
// root is "streamd", so that usage lines read `streamd ctl ADDR scale N`;
// execute it with arguments "ctl", addr, then the command's. Its root
// takes the global flags (--log-level, -v) as streamd's does, so that
// they may come before ctl, before ADDR or after the command; at
// --log-level info each answer is logged with its status and time.
func ctlCommands(addr, long string) *cobra.Command {
	var token string
	var timeout time.Duration
	top := &cobra.Command{Use: "streamd", SilenceErrors: true, SilenceUsage: true}
	lf := &logFlags{}
	lf.register(top)
	ctl := &cobra.Command{Use: "ctl"}
	root := &cobra.Command{Use: addr, Long: long}
	top.AddCommand(ctl)
	ctl.AddCommand(root)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr(fmt.Errorf("ctl: unknown command %q (expected one of %s)", args[0], strings.Join(controlCommands, ", ")))
		}
		return usageErr(errors.New("ctl: expected a command after ADDR (one of " + strings.Join(controlCommands, ", ") + ")"))
	}
	// The root's name is the address: say what it is for.
	root.Flags().BoolP("help", "h", false, "help for ctl ADDR")
	root.PersistentFlags().StringVar(&token, "token", os.Getenv("STREAMD_CONTROL_TOKEN"), "the job's --control-token (default $STREAMD_CONTROL_TOKEN)")
	root.PersistentFlags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the answer (a checkpoint waits until it is complete)")
	send := func(cmd *cobra.Command, _, command, query string, body []byte) error {
		level, _, err := lf.Level(cmd)
		if err != nil {
			return err
		}
		log := newLogger(cmd.ErrOrStderr(), level)
		return ctlSend(cmd.OutOrStdout(), log, addr, token, timeout, command, query, body)
	}
	jsonBody := func(v any) []byte { b, _ := json.Marshal(v); return b }
	simple := func(name, short string) *cobra.Command {
		return &cobra.Command{Use: name, Short: short, Args: noArgs,
			RunE: func(cmd *cobra.Command, args []string) error { return send(cmd, addr, name, "", nil) }}
	}
	root.AddCommand(simple("status", "Show the plan: channels, key groups, loads and skew, the controller's last decision, the reconfiguration log"))
	root.AddCommand(&cobra.Command{Use: "scale N", Short: "Change the region's channel count to N",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(errors.New("scale: expected the channel count N (streamd ctl ADDR scale N)" + notArgs(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return usageErr(fmt.Errorf("scale: %q is not a channel count (a whole number, 1 or more)", args[0]))
			}
			return send(cmd, addr, "scale", "", jsonBody(map[string]int{"channels": n}))
		}})
	var target float64
	rb := &cobra.Command{Use: "rebalance", Short: "Rebalance the key groups at the same channel count", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body []byte
			if cmd.Flags().Changed("target") {
				body = jsonBody(map[string]float64{"target": target})
			}
			return send(cmd, addr, "rebalance", "", body)
		}}
	rb.Flags().Float64Var(&target, "target", 0, "the skew to aim at (max channel load / mean, ≥ 1; default the job's region.rebalance target)")
	root.AddCommand(rb)
	root.AddCommand(simple("pause-controller", "Hold the elastic controller's and the rebalancer's own decisions"))
	root.AddCommand(simple("resume-controller", "Let the elastic controller and the rebalancer decide again"))
	root.AddCommand(simple("checkpoint", "Take a checkpoint now; answers with its epoch once it is complete"))
	var savepoint bool
	stop := &cobra.Command{Use: "stop", Short: "Stop the job (with --savepoint: checkpoint first; --restore latest resumes it)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return send(cmd, addr, "stop", "", jsonBody(map[string]bool{"savepoint": savepoint}))
		}}
	stop.Flags().BoolVar(&savepoint, "savepoint", false, "take a checkpoint and stop once it is complete; the run exits with code 3")
	root.AddCommand(stop)
	var specFile string
	up := &cobra.Command{Use: "update OPERATOR [SPEC]", Short: "Replace a stateless operator's logic (SPEC: its entry, e.g. 'filter: value < 500')",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(errors.New("update: expected OPERATOR and its new entry SPEC, or OPERATOR -f FILE (streamd ctl ADDR update OPERATOR [SPEC])" + notArgs(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var body []byte
			switch {
			case len(args) == 2 && specFile == "":
				body = []byte(args[1])
			case len(args) == 1 && specFile != "":
				var err error
				if specFile == "-" {
					body, err = io.ReadAll(cmd.InOrStdin())
				} else {
					body, err = os.ReadFile(specFile)
				}
				if err != nil {
					return usageErr(fmt.Errorf("update: %w", err))
				}
			default:
				return usageErr(errors.New("update: give the operator's new entry as an argument or with -f FILE (- for standard input), not both"))
			}
			return send(cmd, addr, "update", "operator="+url.QueryEscape(args[0]), body)
		}}
	up.Flags().StringVarP(&specFile, "file", "f", "", "read the operator's entry (YAML or JSON) from this file (- for standard input)")
	root.AddCommand(up)
	return top
}

// noArgs refuses the arguments of a ctl command that takes none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr(fmt.Errorf("%s: takes no arguments, not %q (streamd ctl ADDR %s --help)", cmd.Name(), strings.Join(args, " "), cmd.Name()))
	}
	return nil
}

// notArgs is ", not N arguments" for a command given too many, "" for
// one given none.
func notArgs(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return fmt.Sprintf(", not %d arguments", len(args))
}

// ctlSend posts command to the endpoint at addr and prints the answer;
// log gets an info line with the answer's status and how long it took.
func ctlSend(out io.Writer, log *slog.Logger, addr, token string, timeout time.Duration, command, query string, body []byte) error {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u := strings.TrimSuffix(addr, "/") + "/v1/" + command
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return usageErr(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", command, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return jobErr(fmt.Errorf("%s: read the answer: %w", command, err))
	}
	log.Info("control answer", "command", command, "url", u, "status", resp.StatusCode, "took", time.Since(start))
	var pretty bytes.Buffer
	if json.Indent(&pretty, data, "", "  ") == nil {
		data = append(pretty.Bytes(), '\n')
	}
	out.Write(data)
	if resp.StatusCode != http.StatusOK {
		var r controlReply
		json.Unmarshal(data, &r)
		if r.Error == "" {
			r.Error = resp.Status
		}
		// The endpoint's errors mostly name the command already
		// ("rebalance: target …", "update win: …", "checkpoint 4 timed
		// out"): name it once.
		if rest, ok := strings.CutPrefix(r.Error, command); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, " ")) {
			return jobErr(errors.New(r.Error))
		}
		return jobErr(fmt.Errorf("%s: %s", command, r.Error))
	}
	return nil
}
