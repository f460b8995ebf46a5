package runtime

// Option is how Run runs a job, apart from what the job is (plan.Job):
// where its stages run and who watches it start. No Option changes the
// output.
type Option func(*options)

// options are the Options given to Run.
type options struct {
	placer  Placer
	onStart []func(Live)
	// forcePieces, when > 0, makes the stage that reads the source cut
	// every batch into pieces of that many records per channel, measured
	// or not (cut.go): a test knob (ForcePieces in export_test.go).
	forcePieces int
}

// Placement starts the job's stage goroutines with p (JobPlacer pins them
// to cores); without it, or with nil, they run unpinned.
func Placement(p Placer) Option { return func(o *options) { o.placer = p } }

// OnStart has f called once the job is built, before any record flows,
// with the job's live control and counters (Live), on the goroutine that
// called Run. f must return soon: no record flows until it has. Several
// are called in the order given.
func OnStart(f func(Live)) Option {
	return func(o *options) { o.onStart = append(o.onStart, f) }
}
