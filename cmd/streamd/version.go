package main

import (
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version: module version, commit, commit time, Go version, platform, build flags",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd.OutOrStdout())
		},
	}
}

// printVersion writes what the binary knows of its own build
// (runtime/debug.ReadBuildInfo) to w.
func printVersion(w io.Writer) error {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	_, err := io.WriteString(w, versionText(bi))
	return err
}

// versionText formats bi, one field a line:
//
//	streamd v1.2.0                        the module version; (devel) for a build in a checkout
//	commit   3f1c…e9a0+dirty              vcs.revision, +dirty with uncommitted changes
//	time     2026-12-01T17:04:11Z         vcs.time: the commit's time, UTC
//	go       go1.26.8
//	platform linux/amd64
//	flags    -buildmode=exe -compiler=gc CGO_ENABLED=1 GOAMD64=v1
//
// A field the binary does not carry reads "unknown" (no VCS stamp: `go
// run`, -buildvcs=false, a build outside a git checkout), the flags
// "none"; bi nil (a binary built without module support) gives the Go
// version and the platform the binary runs as.
func versionText(bi *debug.BuildInfo) string {
	version, goVersion := "(devel)", goruntime.Version()
	settings := map[string]string{}
	var flags []string
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
			switch {
			case strings.HasPrefix(s.Key, "vcs"), s.Key == "GOOS", s.Key == "GOARCH":
			default:
				v := s.Value
				if strings.ContainsAny(v, " \t\"`") {
					v = strconv.Quote(v) // -ldflags="-s -w"
				}
				flags = append(flags, s.Key+"="+v)
			}
		}
	}
	commit := settings["vcs.revision"]
	switch {
	case commit == "":
		commit = "unknown"
	case settings["vcs.modified"] == "true":
		commit += "+dirty"
	}
	commitTime := settings["vcs.time"]
	if commitTime == "" {
		commitTime = "unknown"
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	if goos == "" || goarch == "" {
		goos, goarch = goruntime.GOOS, goruntime.GOARCH
	}
	flagText := strings.Join(flags, " ")
	if flagText == "" {
		flagText = "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "streamd %s\n", version)
	fmt.Fprintf(&b, "commit   %s\n", commit)
	fmt.Fprintf(&b, "time     %s\n", commitTime)
	fmt.Fprintf(&b, "go       %s\n", goVersion)
	fmt.Fprintf(&b, "platform %s/%s\n", goos, goarch)
	fmt.Fprintf(&b, "flags    %s\n", flagText)
	return b.String()
}
