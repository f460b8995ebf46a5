// Package snapshot stores checkpoints on local disk: the storage half of
// asynchronous barrier snapshots (Carbone, Fóra, Ewen, Haridi, Tzoumas,
// "Lightweight Asynchronous Snapshots for Distributed Dataflows", 2015).
//
// Layout: one directory per checkpoint, <dir>/chk-000000000042/, holding
// the operators' state files and a _metadata file written last. A
// checkpoint is written under a temporary name (.tmp-chk-…), every file
// fsynced, then the directory is renamed into place and its parent
// fsynced: a checkpoint directory either is complete or does not exist
// under its final name.
//
// Invariants:
//
//   - Every state file's size and CRC-32C are in the metadata; the metadata
//     carries its own CRC-32C and a format version. Load verifies them all:
//     a truncated, corrupt or missing file makes the checkpoint invalid.
//   - State files are plain names inside their checkpoint's directory:
//     writers cannot create others, and metadata naming anything else
//     ("../x", an absolute path) makes the checkpoint invalid before a
//     file is read, so a forged checkpoint cannot make a restore read
//     outside it.
//   - Older checkpoints are deleted only after a newer one is complete; the
//     newest Retain complete ones are kept. Stray temporary directories
//     (a crash while writing) are ignored and removed by Open.
//   - Latest returns the newest checkpoint that verifies, and says which
//     newer ones it skipped and why; it never falls back to "no state"
//     silently: with checkpoints present and none valid it returns an
//     error.
//
// All file system access goes through FS, so tests inject ENOSPC, fsync
// errors and torn writes.
package snapshot
