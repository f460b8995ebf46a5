// Package perf is streamd's benchmark harness: workloads, load generation
// in closed loop (maximum throughput) or open loop (a fixed target rate,
// latency measured from each record's intended send time, so without
// coordinated omission), HdrHistogram latency, throughput per core, and
// reports (text table, JSON, .hgrm, PNG plots).
package perf
