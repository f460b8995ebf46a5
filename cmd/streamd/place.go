package main

import (
	"streamd/core/jobfile"
	"streamd/core/runtime"
)

// place pins the job's stages to cores unless the job file says
// runtime.pin: false.
func place(f *jobfile.File, job *runtime.Job) {
	if p := f.Spec.Runtime.Pin; p != nil && !*p {
		return
	}
	job.Placer = runtime.JobPlacer(job, job.Log)
}
