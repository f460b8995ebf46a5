package core

import "errors"

// EpochSink is a sink whose output is exactly-once across crashes: output
// is kept per checkpoint epoch and only committed output survives a
// restore. All calls come from the sink's goroutine.
type EpochSink interface {
	Sink
	// OpenEpochs replaces Open when the job checkpoints: restored is the
	// epoch of the checkpoint the job resumes from (0: a fresh start); the
	// sink keeps committed output of epochs ≤ restored and discards the
	// rest.
	OpenEpochs(s *Schema, restored uint64) error
	// Barrier says every record written so far belongs to epoch ≤ epoch.
	Barrier(epoch uint64) error
	// Commit says checkpoint epoch is complete: output of epochs ≤ epoch
	// must survive any later crash.
	Commit(epoch uint64) error
}

// OutputManifest is implemented by EpochSinks that can describe their
// durable output, so that a restore can check it was not changed since.
type OutputManifest interface {
	// Manifest describes every part made durable by Barrier calls so far
	// (opaque to the runtime; nil: nothing to record). It is called on the
	// sink's goroutine right after Barrier, and the checkpoint of that
	// barrier stores it as its file OutputManifestFile. The caller does not
	// change the slice; the sink must not either.
	Manifest() []byte
	// VerifyOutput checks, before OpenEpochs(restored), that the output a
	// restore from checkpoint restored keeps is exactly what manifest (that
	// checkpoint's) describes. It changes nothing; a damaged output is an
	// error wrapping ErrOutputDamaged that names the part.
	VerifyOutput(manifest []byte, restored uint64) error
}

// OutputManifestFile is the checkpoint file holding the sink's manifest.
const OutputManifestFile = "sink-output"

// ErrOutputDamaged: output committed by the checkpoint to restore was
// deleted, truncated or changed since; resuming from it would not give
// the uncrashed output.
var ErrOutputDamaged = errors.New("committed output damaged")
