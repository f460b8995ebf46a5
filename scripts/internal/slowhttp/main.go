// Command slowhttp is a lookup server that answers slowly, for
// scripts/bench.sh backpressure and scripts/bench.sh slowjob: every GET
// waits -delay (or, with -delay-max, a uniformly random time between
// -delay and -delay-max), then answers {"city": "<last path segment>"}.
// It prints its address on stdout, and the number of requests served on
// stderr when it gets SIGTERM.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	delay := flag.Duration("delay", time.Millisecond, "how long each answer waits")
	delayMax := flag.Duration("delay-max", 0, "when above -delay: each answer waits a uniformly random time in [delay, delay-max)")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	var served atomic.Int64
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		fmt.Fprintf(os.Stderr, "slowhttp: %d requests\n", served.Load())
		os.Exit(0)
	}()
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := *delay
		if *delayMax > d {
			d += rand.N(*delayMax - d)
		}
		time.Sleep(d)
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"city\": %q}\n", path.Base(r.URL.Path))
	}))
}
