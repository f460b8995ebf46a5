// Package order restores the splitter's order behind a parallel region.
//
// The splitter numbers every record and marker it routes (sequence numbers);
// each channel processes its share in FIFO order and its output keeps the
// input's sequence numbers, or, for results released at one trigger (a
// window firing at a watermark), the trigger's sequence number plus a
// defined tie order (window end, then key). The Merger interleaves the
// channels' outputs by (sequence number, tie order), which makes the
// output independent of the channel count (Schneider, Hirzel, Gedik, Wu,
// "Auto-parallelizing stateful distributed streaming applications", PACT
// 2012, §4: ordered merging with sequence numbers and pulses).
//
// A channel that holds no output (all its records were filtered out, or it
// was sent none) would stall an ordered merge. Channels therefore report
// progress — "I will never again emit a sequence number ≤ P" — on every
// batch they send and in pulse markers, and the merger uses it in place of
// a missing head.
//
// Markers (watermarks, barriers, end of stream) are broadcast by the
// splitter to every channel with one sequence number; the merger releases a
// marker only when every channel has delivered it (alignment), after every
// record ordered before it.
//
// The Merger is generic over the batch type and holds no goroutines: the
// runtime feeds it what it pops from the channels' rings and carries out the
// steps it returns. It must drain every ring into the merger without
// waiting for a particular channel, or a full ring could deadlock the
// region; the merger's memory is then bounded by how far channels can run
// ahead of the slowest, which pulses keep short.
package order
