// Package doclinks holds only a test: it keeps the repository's citations
// of its own documents true and the repository free of references to files
// outside it.
//
// A citation names a document under docs/ and a section of it, in the forms
// the repository uses:
//
//	docs/ARCHITECTURE.md, "Checkpoint barrier"
//	docs/JOB.md ("Late records")
//	docs/PERFORMANCE-LOG.md, "Rebalancing", "the gainer holds key groups"
//	ARCHITECTURE.md's "Determinism"
//
// in Markdown, in Go comments and in shell and YAML comments, wrapped over
// lines or not. The document must exist and a #-heading of it must begin
// with the quoted text (case, backquotes and spacing ignored, a trailing "…"
// allowed; in a dated heading such as "2026-12-01 (later): the gainer
// holds…" the text after the date's colon counts as its beginning too).
// A document's references to its own sections (`("Determinism")`, `see
// "Parallel output" below`) must name headings it has, and Markdown links
// to a heading's anchor (`[x](#anchor)`, `[x](JOB.md#anchor)`) anchors the
// target document has.
package doclinks
