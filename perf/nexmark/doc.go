// Package nexmark is the Nexmark benchmark (Tucker et al., "NEXMark – A
// Benchmark for Queries over Data Streams", 2008) for streamd: a seeded,
// deterministic event generator (a core.Source) following the Apache Beam
// and Flink Nexmark generators' conventions, and queries q0, q1, q2, q5, q7
// and q8 registered as perf workloads "nexmark-q0" … "nexmark-q8".
//
// One schema for three streams: a streamd edge carries one schema, so the
// generator emits one wide event record (see Schema) whose Kind field says
// whether it is a person, an auction or a bid; the fields of the other two
// kinds are zero ("" for strings). Queries filter on Kind first.
//
// Invariants:
//
//   - The events depend only on Config (seed, proportions, delays), never on
//     batch boundaries, the rate or the wall clock: event n is computed from
//     a PRNG seeded with (Seed, n), as Beam seeds java.util.Random with the
//     event id. The same Config gives the same events.
//   - Event time (DateTime) is BaseTime + n × InterEventDelay: strictly
//     increasing, so queries run with a zero out-of-orderness bound and never
//     see late records.
//   - Generating an event allocates nothing: every string is taken from
//     tables built once at package init.
//   - Query outputs are deterministic and do not depend on the channel count:
//     windowed operators emit by window end, then key (or by the documented
//     tie order), and the tests compare 1 and 4 channels record for record.
package nexmark
