// Command slowhttp is a lookup server that answers slowly, for
// scripts/bench-backpressure.sh: every GET waits -delay, then answers
// {"city": "<last path segment>"}. It prints its address on stdout.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"time"
)

func main() {
	delay := flag.Duration("delay", time.Millisecond, "how long each answer waits")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(*delay)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"city\": %q}\n", path.Base(r.URL.Path))
	}))
}
