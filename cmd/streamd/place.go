package main

import (
	"streamd/core/jobfile"
	"streamd/core/plan"
	"streamd/core/runtime"
)

// place is where the job's stages run: pinned to cores unless the job
// file says runtime.pin: false.
func place(f *jobfile.File, job *plan.Job) runtime.Option {
	if p := f.Spec.Runtime.Pin; p != nil && !*p {
		return runtime.Placement(nil)
	}
	return runtime.Placement(runtime.JobPlacer(job, job.Log))
}
