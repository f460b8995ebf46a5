// Command benthos-peers runs the peer pipeline (perf/peers/benthos/pipeline.yaml)
// through Benthos v4 (github.com/redpanda-data/benthos/v4/public/service) and
// prints the records that reached the output, the wall time and records/s.
//
//	PEERS_CSV=/abs/flights.csv benthos-peers [-config pipeline.yaml]
//
// Output, one line: "benthos records_in=N records_out=M seconds=S records_per_s=R"
// (records/s counts input records, as streamd's report does).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
)

var outCount atomic.Int64

// countDrop is the drop output plus a counter.
type countDrop struct{}

func (countDrop) Connect(context.Context) error { return nil }
func (countDrop) WriteBatch(_ context.Context, b service.MessageBatch) error {
	outCount.Add(int64(len(b)))
	return nil
}
func (countDrop) Close(context.Context) error { return nil }

func main() {
	config := flag.String("config", "pipeline.yaml", "Benthos stream config")
	inRecords := flag.Int64("in", 3000000, "input records (for records/s)")
	flag.Parse()

	err := service.RegisterBatchOutput("count_drop", service.NewConfigSpec(),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return countDrop{}, service.BatchPolicy{}, 1, nil
		})
	if err != nil {
		fail(err)
	}
	conf, err := os.ReadFile(*config)
	if err != nil {
		fail(err)
	}
	b := service.NewStreamBuilder()
	if err := b.SetYAML(string(conf)); err != nil {
		fail(err)
	}
	stream, err := b.Build()
	if err != nil {
		fail(err)
	}
	start := time.Now()
	if err := stream.Run(context.Background()); err != nil {
		fail(err)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("benthos records_in=%d records_out=%d seconds=%.3f records_per_s=%.0f\n",
		*inRecords, outCount.Load(), secs, float64(*inRecords)/secs)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benthos-peers:", err)
	os.Exit(1)
}
