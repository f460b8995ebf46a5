package runtime_test

import (
	"context"
	"fmt"
	"os"

	"streamd/core/jobfile"
	"streamd/core/runtime"
)

// From a job file to a finished run, as a Go program: jobfile.Parse (or
// Load) decodes the file strictly, File.Build makes the plain job
// description (a plan.Job), runtime.Run runs it to its end. Here a
// generator of 1,000 records over 10 keys, counted per key in a region of
// two channels, written to standard output in the order the window fires
// its keys — the same for any channel count. (A project in the region
// that dropped window_end would make that order depend on the channel
// count: a weak use that streamd validate names.)
func Example() {
	f, err := jobfile.Parse("job.yaml", []byte(`
source:
  generator: {count: 1000, keys: 10, seed: 1}
event_time: {field: ts}
region:
  channels: 2
  key_by: [key]
  ops:
    - window: {size: 1h, aggregates: {n: count}}
post:
  - project: [key, n]
sink:
  stdout: {format: csv}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	job, err := f.Build(jobfile.Options{Stdout: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := runtime.Run(context.Background(), job)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("records in:", rep.RecordsIn)
	// Output:
	// key,n
	// k000000,102
	// k000001,98
	// k000002,120
	// k000003,101
	// k000004,88
	// k000005,104
	// k000006,99
	// k000007,106
	// k000008,96
	// k000009,86
	// records in: 1000
}
