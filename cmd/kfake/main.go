// Command kfake runs a Kafka cluster for scripts and examples: kfake, an
// in-process cluster speaking the real Kafka protocol, on 127.0.0.1
// (internal/kafkatest), until interrupted. It prints the bootstrap
// address on its first line.
//
//	kfake -port 9092 -partitions 3 -topic flights -topic alerts
//
// It is a command of its own, not a streamd subcommand, so that the
// streamd binary carries no test broker. State is in memory: a new run
// starts empty.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"streamd/internal/kafkatest"
)

type topics []string

func (t *topics) String() string     { return strings.Join(*t, ",") }
func (t *topics) Set(s string) error { *t = append(*t, s); return nil }

func main() {
	port := flag.Int("port", 9092, "the port to listen on, on 127.0.0.1 (0: any free one)")
	partitions := flag.Int("partitions", 3, "partitions of each -topic")
	var ts topics
	flag.Var(&ts, "topic", "a topic to create (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 || *partitions < 1 {
		flag.Usage()
		os.Exit(2)
	}
	c, err := kafkatest.Start(*port, int32(*partitions), ts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	fmt.Println(kafkatest.Addr(c))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	c.Close()
}
