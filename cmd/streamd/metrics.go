package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"streamd/core"
	"streamd/core/plan"
	"streamd/core/runtime"
)

// metricsServer serves a job's counters in the Prometheus text exposition
// format (version 0.0.4) on /metrics, with /healthz (200 while the process
// runs) and /readyz (200 from the job's start, i.e. OnStart, until it ends;
// 503 otherwise). Every figure is read from the job's live view at scrape
// time: nothing is added to the data path but the latency hook.
//
// The format is written here rather than through client_golang: importing
// client_golang needs go.mod to require its own dependencies (client_model,
// common, procfs, perks, goautoneg), which it does not yet.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	job  *plan.Job
	size int64 // the source's size in records; 0 = unknown
	lat  *latency

	live  atomic.Pointer[liveView]
	ended atomic.Bool

	mu          sync.Mutex // guards the congestion sample
	prevWall    time.Duration
	prevBlocked int64
	congestion  float64
}

// listenMetrics listens on addr (host:port; port 0 picks one) and serves
// until close.
func listenMetrics(addr string, job *plan.Job, size int64, lat *latency) (*metricsServer, error) {
	ln, err := net.Listen("tcp", loopbackDefault(addr))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := &metricsServer{ln: ln, job: job, size: size, lat: lat}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", m.serveReady)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go m.srv.Serve(ln)
	return m, nil
}

// addr is the address the server listens on.
func (m *metricsServer) addr() string { return m.ln.Addr().String() }

// started marks the job running (from runtime.OnStart).
func (m *metricsServer) started(l liveView) { m.live.Store(&l) }

// end marks the job ended: /readyz answers 503, /metrics keeps the last
// figures.
func (m *metricsServer) end() { m.ended.Store(true) }

func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
}

func (m *metricsServer) serveReady(w http.ResponseWriter, _ *http.Request) {
	switch {
	case m.live.Load() == nil:
		http.Error(w, "not started", http.StatusServiceUnavailable)
	case m.ended.Load():
		http.Error(w, "ended", http.StatusServiceUnavailable)
	default:
		io.WriteString(w, "ready\n")
	}
}

// Collect implements prometheus.Collector: the job's figures are read from
// its live view at scrape time (nothing on the data path).
func (m *metricsServer) Collect(ch chan<- prometheus.Metric) {
	e := &expo{ch: ch}
	if lp := m.live.Load(); lp != nil {
		m.writeJob(e, *lp)
	}
}

// Describe implements prometheus.Collector as an unchecked collector: the
// label sets (operators, channels) are only known once the job runs.
func (m *metricsServer) Describe(chan<- *prometheus.Desc) {}

func (m *metricsServer) writeJob(e *expo, l liveView) {
	r := l.Snapshot()
	e.family("streamd_job_info", "gauge", "The job being run (value 1).")
	e.sample("streamd_job_info", 1, "job", r.Job)
	e.family("streamd_job_wall_seconds", "gauge", "Time since the job started.")
	e.sample("streamd_job_wall_seconds", r.Wall.Seconds())
	e.family("streamd_job_running", "gauge", "1 while the job runs, 0 once it has ended.")
	e.sample("streamd_job_running", b2f(!m.ended.Load()))
	e.family("streamd_records_in_total", "counter", "Records read from the source.")
	e.sample("streamd_records_in_total", float64(r.RecordsIn))
	e.family("streamd_records_out_total", "counter", "Records written to the sink.")
	e.sample("streamd_records_out_total", float64(r.RecordsOut))
	if m.size > 0 {
		e.family("streamd_source_size_records", "gauge", "Records the source will produce (sources that know their size).")
		e.sample("streamd_source_size_records", float64(m.size))
	}

	e.family("streamd_operator_records_in_total", "counter", "Records into an operator, summed over channels.")
	for _, o := range r.Operators {
		e.sample("streamd_operator_records_in_total", float64(o.In), "operator", o.Name, "stage", o.Stage)
	}
	e.family("streamd_operator_records_out_total", "counter", "Records out of an operator, summed over channels.")
	for _, o := range r.Operators {
		e.sample("streamd_operator_records_out_total", float64(o.Out), "operator", o.Name, "stage", o.Stage)
	}
	e.family("streamd_operator_stat", "gauge", "An operator's own counters (windows open, lookups cached, ...).")
	for _, o := range r.Operators {
		keys := make([]string, 0, len(o.Stats))
		for k := range o.Stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e.sample("streamd_operator_stat", float64(o.Stats[k]), "operator", o.Name, "stage", o.Stage, "stat", k)
		}
	}

	var blocked int64
	e.family("streamd_channel_records_total", "counter", "Records a channel of the parallel region processed.")
	for i, c := range r.Channels {
		e.sample("streamd_channel_records_total", float64(c.Records), "channel", strconv.Itoa(i))
	}
	e.family("streamd_channel_busy_seconds_total", "counter", "Time a channel spent processing batches.")
	for i, c := range r.Channels {
		e.sample("streamd_channel_busy_seconds_total", float64(c.BusyNs)/1e9, "channel", strconv.Itoa(i))
	}
	e.family("streamd_channel_splitter_blocked_seconds_total", "counter",
		"Time the splitter was blocked on a channel's full input ring; the sum over channels, per second of wall time, is the congestion index.")
	for i, c := range r.Channels {
		e.sample("streamd_channel_splitter_blocked_seconds_total", float64(c.BlockedNs)/1e9, "channel", strconv.Itoa(i))
		blocked += c.BlockedNs
	}
	e.family("streamd_channel_ring_batches", "gauge", "Batches waiting in a channel's input ring now.")
	for i, n := range l.RingLen() {
		e.sample("streamd_channel_ring_batches", float64(n), "channel", strconv.Itoa(i))
	}
	e.family("streamd_ring_capacity_batches", "gauge", "Capacity of every ring, in batches.")
	e.sample("streamd_ring_capacity_batches", float64(m.job.RingSize))
	e.family("streamd_congestion_index", "gauge",
		"Fraction of the time since the previous scrape the splitter spent blocked on full channel rings, in [0, 1].")
	e.sample("streamd_congestion_index", m.congestionSince(r.Wall, blocked))
	e.family("streamd_channels", "gauge", "Channels of the parallel region now.")
	e.sample("streamd_channels", float64(l.Channels()))
	e.family("streamd_rescales_total", "counter", "Live channel count changes.")
	e.sample("streamd_rescales_total", float64(r.Rescales))
	e.family("streamd_rescale_pause_seconds", "gauge", "Pauses channels saw in live channel changes, at quantiles (1 = max).")
	if r.Rescales > 0 {
		e.sample("streamd_rescale_pause_seconds", r.PauseP50.Seconds(), "quantile", "0.5")
		e.sample("streamd_rescale_pause_seconds", r.PauseP99.Seconds(), "quantile", "0.99")
		e.sample("streamd_rescale_pause_seconds", r.PauseMax.Seconds(), "quantile", "1")
	}
	e.family("streamd_rescale_drain_seconds", "gauge", "Time the source waited in live channel changes for the old channels to finish their backlog, at quantiles (1 = max).")
	if r.Rescales > 0 {
		e.sample("streamd_rescale_drain_seconds", r.DrainP50.Seconds(), "quantile", "0.5")
		e.sample("streamd_rescale_drain_seconds", r.DrainMax.Seconds(), "quantile", "1")
	}

	e.family("streamd_channel_reconfig_pause_seconds_total", "counter", "Time a channel paused in live reconfigurations (channel changes, rebalance steps).")
	for i, c := range r.Channels {
		e.sample("streamd_channel_reconfig_pause_seconds_total", float64(c.PauseNs)/1e9, "channel", strconv.Itoa(i))
	}
	e.family("streamd_reconfigurations_total", "counter", "Reconfigurations carried out, by kind (scale, rebalance, update, checkpoint, stop, pause-controller, resume-controller), from the control endpoint, a policy or the elastic controller.")
	for _, k := range sortedKeys(r.Reconfigurations) {
		e.sample("streamd_reconfigurations_total", float64(r.Reconfigurations[k]), "kind", k)
	}
	e.family("streamd_reconfigurations_refused_total", "counter", "Reconfiguration requests refused or failed, by kind.")
	for _, k := range sortedKeys(r.Refused) {
		e.sample("streamd_reconfigurations_refused_total", float64(r.Refused[k]), "kind", k)
	}

	if rb := r.Rebalance; rb != nil {
		e.family("streamd_rebalance_steps_total", "counter", "Rebalance steps carried out (key groups moved between channels at the same channel count).")
		e.sample("streamd_rebalance_steps_total", float64(rb.Steps))
		e.family("streamd_rebalance_groups_moved_total", "counter", "Key groups moved by rebalancing.")
		e.sample("streamd_rebalance_groups_moved_total", float64(rb.Groups))
		e.family("streamd_rebalance_skew", "gauge", "Max channel load / mean in the last period the rebalancer measured (records).")
		e.sample("streamd_rebalance_skew", rb.LatestSkew)
		e.family("streamd_rebalance_pause_seconds", "gauge", "Pauses of the channels that lost or gained key groups in a rebalance step, at quantiles (1 = max).")
		if rb.Steps > 0 {
			e.sample("streamd_rebalance_pause_seconds", rb.PauseP50.Seconds(), "quantile", "0.5")
			e.sample("streamd_rebalance_pause_seconds", rb.PauseP99.Seconds(), "quantile", "0.99")
			e.sample("streamd_rebalance_pause_seconds", rb.PauseMax.Seconds(), "quantile", "1")
		}
	}

	e.family("streamd_late_records_total", "counter", "Records that arrived after their windows fired.")
	e.sample("streamd_late_records_total", float64(r.Late))
	e.family("streamd_partly_late_records_total", "counter", "Records that arrived after some of their sliding windows fired (missing from those).")
	e.sample("streamd_partly_late_records_total", float64(r.PartlyLate))
	e.family("streamd_late_fired_records_total", "counter", "Records that came after their window fired, within its allowed lateness, and fired it again.")
	e.sample("streamd_late_fired_records_total", float64(r.LateFired))
	e.family("streamd_skipped_records_total", "counter", "Malformed records skipped (on_error: skip).")
	e.sample("streamd_skipped_records_total", float64(r.Skipped))
	e.family("streamd_dead_letter_records_total", "counter", "Records written to the dead-letter file.")
	e.sample("streamd_dead_letter_records_total", float64(r.DeadLetters))

	if m.lat != nil {
		q, n := m.lat.quantiles(time.Now(), 50, 99, 100)
		e.family("streamd_sink_latency_seconds", "gauge",
			"Time from a batch's oldest record entering the job to the sink, over the last few seconds, at quantiles (1 = max).")
		if n > 0 {
			e.sample("streamd_sink_latency_seconds", q[0].Seconds(), "quantile", "0.5")
			e.sample("streamd_sink_latency_seconds", q[1].Seconds(), "quantile", "0.99")
			e.sample("streamd_sink_latency_seconds", q[2].Seconds(), "quantile", "1")
		}
	}
}

// congestionSince returns the congestion index over the time since the
// previous call (the previous scrape), and remembers this one.
func (m *metricsServer) congestionSince(wall time.Duration, blocked int64) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dw := wall - m.prevWall; dw > 0 {
		m.congestion = min(max(float64(blocked-m.prevBlocked)/float64(dw), 0), 1)
		m.prevWall, m.prevBlocked = wall, blocked
	}
	return m.congestion
}

// goRuntimeMetrics maps runtime/metrics names to exposed names.

// expo turns the job's figures into client_golang constant metrics:
// family names a metric's type and help, sample emits one value with its
// labels (name, value pairs).
type expo struct {
	ch   chan<- prometheus.Metric
	typ  map[string]prometheus.ValueType
	help map[string]string
}

func (e *expo) family(name, typ, help string) {
	if e.typ == nil {
		e.typ, e.help = map[string]prometheus.ValueType{}, map[string]string{}
	}
	t := prometheus.GaugeValue
	if typ == "counter" {
		t = prometheus.CounterValue
	}
	e.typ[name], e.help[name] = t, help
}

func (e *expo) sample(name string, v float64, labels ...string) {
	var keys, vals []string
	for i := 0; i+1 < len(labels); i += 2 {
		keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
	}
	desc := prometheus.NewDesc(name, e.help[name], keys, nil)
	e.ch <- prometheus.MustNewConstMetric(desc, e.typ[name], v, vals...)
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// listenPprof serves net/http/pprof's handlers under /debug/pprof/ on addr,
// on a mux of its own. (Importing net/http/pprof also registers them on
// http.DefaultServeMux, which streamd never serves.)
func listenPprof(addr string) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", loopbackDefault(addr))
	if err != nil {
		return nil, nil, fmt.Errorf("pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, ln, nil
}

// observers are what --metrics-addr, --pprof-addr and the status line
// attach to a job: they hook its OnSink (keeping a hook already set), are
// handed its live view by started (runtime.OnStart) and are stopped by end
// and close.
type observers struct {
	metrics *metricsServer
	pprof   *http.Server
	pprofLn net.Listener
	status  *status
}

// observe sets up the observers fl asks for around job; status lines go to
// stderr. The caller runs the job with runtime.OnStart(o.started), calls
// end once the job has returned, then close.
func observe(job *plan.Job, fl runFlags, stderr io.Writer) (*observers, error) {
	o := &observers{}
	var size int64
	if s, ok := job.Source.(core.Sized); ok {
		size = s.Size()
	}
	var lat *latency
	if fl.metricsAddr != "" || !fl.quiet {
		lat = newLatency()
	}
	if fl.pprofAddr != "" {
		srv, ln, err := listenPprof(fl.pprofAddr)
		if err != nil {
			return nil, err
		}
		o.pprof, o.pprofLn = srv, ln
		if !fl.quiet {
			fmt.Fprintf(stderr, "streamd: pprof on http://%s/debug/pprof/\n", ln.Addr())
		}
	}
	if fl.metricsAddr != "" {
		m, err := listenMetrics(fl.metricsAddr, job, size, lat)
		if err != nil {
			o.close()
			return nil, err
		}
		o.metrics = m
		if !fl.quiet {
			fmt.Fprintf(stderr, "streamd: metrics on http://%s/metrics\n", m.addr())
		}
	}
	if !fl.quiet {
		o.status = newStatus(stderr, fl.statusInterval, size, lat)
		if cp := job.Checkpoint; cp != nil && cp.Restore != nil {
			o.status.base = cp.Restore.Meta.Sources["source"] // records read before the checkpoint
		}
	}
	if lat != nil {
		prev := job.OnSink
		job.OnSink = func(b *core.Batch) {
			lat.observe(b)
			if prev != nil {
				prev(b)
			}
		}
	}
	return o, nil
}

// started hands the observers the job's live view once it has started
// (runtime.OnStart).
func (o *observers) started(l runtime.Live) {
	if o.metrics != nil {
		o.metrics.started(l)
	}
	if o.status != nil {
		o.status.start(l)
	}
}

// end stops the status line and marks the job not ready.
func (o *observers) end() {
	if o.status != nil {
		o.status.end()
	}
	if o.metrics != nil {
		o.metrics.end()
	}
}

// close stops the servers.
func (o *observers) close() {
	if o.metrics != nil {
		o.metrics.close()
	}
	if o.pprof != nil {
		o.pprof.Close()
	}
}

// loopbackDefault makes a bare ":port" (no host) bind loopback
// (127.0.0.1), as --control-addr does: profiles and metrics are served to
// the network only when a host is named (0.0.0.0:9090, an interface's
// address). Anything else is returned as it is, for net.Listen to judge.
func loopbackDefault(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}
