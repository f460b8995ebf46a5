module streamd/perf/peers/gochan

go 1.26.8
