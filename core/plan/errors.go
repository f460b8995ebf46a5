package plan

import "errors"

// ErrRefused: a change asked of a running job is not valid for it (a
// channel count out of range, an update of a stateful operator, a
// checkpoint of a job without checkpointing); the job is unchanged. The
// error's text says why. The job loader returns it for an update its
// description cannot take (core/jobfile, BuildUpdate), and the runtime's
// live control for the rest (runtime.Live); callers test it with
// errors.Is.
var ErrRefused = errors.New("refused")
