// Package elastic decides how many channels a parallel region should run
// with. It holds the pure, deterministic parts of elastic scaling: the
// per-period metrics the runtime measures ([Period], [Window]), the level
// controller of Gedik, Schneider, Hirzel and Wu ([Levels]), the DS2 policy of
// Kalavri et al. ([DS2]), a policy that never changes anything ([Off]) and a
// wrapper that only reports what a policy would do ([DryRun]), and the
// timeline the runtime writes for `--elastic-log` ([TimelineHeader],
// [TimelineRaw], [ReadTimeline]), which holds every period as the
// policy saw it so that recorded runs replay (replay_test.go). Both
// policies leave windows taken on a loaded machine unjudged (loaded.go).
// The sub-package sim drives any [Policy] against a modelled parallel
// region, calibrated from measured runs (sim.Calibration); its scenario
// scripts (sim/testdata/scenarios) hold the policies' goals.
//
// References:
//
//   - [TPDS14] B. Gedik, S. Schneider, M. Hirzel, K.-L. Wu. Elastic Scaling for
//     Data Stream Processing. IEEE TPDS 25(6), 2014. Section 4 (the control
//     algorithm: congestion index, throughput, principles P1–P6, levels and
//     change sensitivity).
//   - [DS2] V. Kalavri, J. Liagouris, M. Hoffmann, D. Dimitrova, M. Forshaw,
//     T. Roscoe. Three steps is all you need: fast, accurate, automatic
//     scaling decisions for distributed streaming dataflows. OSDI 2018.
//     Section 3 (true processing and output rates from useful time; the
//     optimal parallelism in one pass).
//
// # Invariants
//
//   - Determinism: a policy is a pure function of the sequence of [Period]
//     values it is given. It reads no clock, starts no goroutine and uses no
//     randomness; the same periods in the same order give the same decisions.
//     Time enters only as Period.LengthNs.
//   - The measured channel count is the truth: len(Period.Channels) is the
//     number of channels the region ran with during the period. A policy whose
//     last decision was not carried out (dry run, cores not leased, a failed
//     reconfiguration) resynchronises to it instead of trusting its own state.
//   - Every Decision.Channels lies in [min channels, limit], where the limit is
//     min(Config.MaxChannels, Config.Cores). The level controller only returns
//     channel counts on its level map and moves up at most one level per
//     decision (down, P2 may skip levels whose measured capacity carries the
//     load).
//   - Decisions come from a window of periods at one channel count, and
//     after a change the policies wait Config.CoolDownPeriods periods before
//     the next: one noisy period changes nothing.
//   - Units: durations in nanoseconds (int64), rates in records per second
//     (float64), counts in records (uint64). The congestion index and
//     utilisations are fractions in [0, 1].
//   - Policies are not safe for concurrent use: one goroutine, the runtime's
//     control loop, calls Step once per adaptation period. [Period] and
//     [Decision] are plain values; Step neither keeps nor modifies the
//     Period.Channels slice after it returns.
//
// The runtime's part (outside this package; core/runtime's Controller, a
// control policy): read the per-goroutine counters through atomics once per
// period, turn them into a [Period] with a [Window], call Step, and carry
// out Decision.Channels unless Decision.DryRun is set. It skips the period
// in which a reconfiguration took effect, so that no period given to Step
// mixes two channel counts.
package elastic
