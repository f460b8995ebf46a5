package jobfile

import (
	"fmt"
	"os"
	"strings"
	"time"

	"streamd/core"
	"streamd/core/source"
)

// LiveSpec holds the live-input keys of the file sources (csv, jsonl,
// json): follow a growing file, watch a directory or glob for new files
// (source.LiveOptions).
type LiveSpec struct {
	Follow bool `yaml:"follow"`
	Watch  bool `yaml:"watch"`
	// Poll is how often an idle live input looks for new data (default
	// 200ms).
	Poll string `yaml:"poll"`
	// IdleTimeout ends a live input after no new record for this long
	// (default: never).
	IdleTimeout string `yaml:"idle_timeout"`
}

// liveWhy is the reason follow and watch give for the weak promise.
const liveWhy = "a live input: its batches end where the writer's writes and the polls end, so where watermarks advance, and which out-of-order records are late, can differ between runs"

// weakLive is the weak function of the file sources: follow and watch
// are live inputs (docs/ARCHITECTURE.md, "Determinism").
func weakLive(l LiveSpec) (string, string) {
	switch {
	case l.Follow:
		return ".follow", liveWhy
	case l.Watch:
		return ".watch", liveWhy
	case l.IdleTimeout != "":
		return ".idle_timeout", "an idle timeout ends the input after a time measured by the clock"
	}
	return "", ""
}

// live checks a file source's live keys: whether it is live, and its
// options. path is the source's path as written, compression its
// compression key, parallelism its parallelism key (0 where it has none).
// Errors name the key at fault.
func (b *sourceBuild) live(l LiveSpec, path, compression string, parallelism int) (source.LiveOptions, bool, error) {
	var o source.LiveOptions
	if !l.Follow && !l.Watch {
		switch {
		case l.Poll != "":
			return o, false, b.errAt(".poll", "poll applies to a live input: set follow: true or watch: true")
		case l.IdleTimeout != "":
			return o, false, b.errAt(".idle_timeout", "idle_timeout applies to a live input: set follow: true or watch: true")
		}
		return o, false, nil
	}
	key := ".follow"
	if !l.Follow {
		key = ".watch"
	}
	full := b.f.path(path)
	st, statErr := os.Stat(full)
	many := source.IsPattern(full) || (statErr == nil && st.IsDir())
	if l.Watch && !many {
		return o, false, b.errAt(".watch", "watch takes a directory or a glob pattern, and %s is neither: follow: true tails one file", path)
	}
	c, err := source.ParseCompression(compression)
	if err != nil {
		return o, false, b.errAt(".compression", "%v", err)
	}
	if c != source.CompressionAuto && c != source.CompressionNone {
		return o, false, b.errAt(".compression", "a live input is read as it grows, so it cannot be %s-compressed: decompress it first, or read it without %s", c, key[1:])
	}
	if e := source.ByExtension(full); e != "" && c != source.CompressionNone {
		return o, false, b.errAt(".path", "%s names a %s-compressed file, which cannot be read as it grows: decompress it first, or read it without %s", path, e, key[1:])
	}
	if parallelism > 1 {
		return o, false, b.errAt(".parallelism", "a live input is parsed by one reader as it grows: parallelism must be 0 or 1 with %s", key[1:])
	}
	if o.Poll, err = b.f.duration(b.path+".poll", l.Poll, source.DefaultPoll); err != nil {
		return o, false, err
	}
	if o.Poll < time.Millisecond || o.Poll > time.Hour {
		return o, false, b.errAt(".poll", "poll must be between 1ms and 1h, not %s", l.Poll)
	}
	if o.IdleTimeout, err = b.f.duration(b.path+".idle_timeout", l.IdleTimeout, 0); err != nil {
		return o, false, err
	}
	if l.IdleTimeout != "" && o.IdleTimeout <= 0 {
		return o, false, b.errAt(".idle_timeout", "idle_timeout must be positive, not %s (leave it out to never end)", l.IdleTimeout)
	}
	// A directory or pattern followed is also watched: the newest file is
	// followed until a later one appears.
	o.Follow, o.Watch = l.Follow, l.Watch || many
	if info := b.info; info != nil {
		o.Log = func(msg string, args ...any) {
			var s strings.Builder
			s.WriteString(msg)
			for i := 0; i+1 < len(args); i += 2 {
				fmt.Fprintf(&s, " %v=%v", args[i], args[i+1])
			}
			info(s.String())
		}
	}
	// The files the source reads are claimed against the sinks: the path,
	// or everything that may appear under it.
	if _, err := b.inputFilesLive(path, many); err != nil {
		return o, false, err
	}
	return o, true, nil
}

// liveSource wraps a live source's construction error at the path key.
func (b *sourceBuild) liveSource(s core.Source, err error) (core.Source, error) {
	if err != nil {
		return nil, b.errAt(".path", "%v", err)
	}
	return s, nil
}
