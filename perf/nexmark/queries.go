package nexmark

import (
	"fmt"
	"time"

	"streamd/core"
	"streamd/core/ops"
	"streamd/core/plan"
	"streamd/core/runtime"
	"streamd/core/window"
	"streamd/kvstate"
	"streamd/perf"
)

// Window sizes of the windowed queries, in ns of event time (Flink
// Nexmark's defaults).
const (
	Q5Size  = 10 * int64(time.Second)
	Q5Slide = 2 * int64(time.Second)
	Q7Size  = 10 * int64(time.Second)
	Q8Size  = 10 * int64(time.Second)
)

// Query builds the job of one Nexmark query over a generator.
type Query struct {
	// Name is the workload name, "nexmark-q0" … .
	Name        string
	Description string
	// Regional says the query has a parallel region (its output must not
	// depend on the channel count).
	Regional bool
	// Build returns the job reading gen with channels channels (regional
	// queries; ≥ 1) and writing to sink.
	Build func(gen *Generator, channels int, sink core.Sink) (*plan.Job, error)
}

// Queries lists the implemented queries.
var Queries = []Query{
	{Name: "nexmark-q0", Description: "Nexmark q0: passthrough of every event", Build: buildQ0},
	{Name: "nexmark-q1", Description: "Nexmark q1: bids with the price converted to euros (× 0.908)", Build: buildQ1},
	{Name: "nexmark-q2", Description: "Nexmark q2: bids on auctions whose id % 123 == 0 (auction, price)", Build: buildQ2},
	{Name: "nexmark-q5", Description: "Nexmark q5: hot items, the auction(s) with the most bids per 10 s window sliding by 2 s", Regional: true, Build: buildQ5},
	{Name: "nexmark-q7", Description: "Nexmark q7: the highest bid(s) per tumbling 10 s window", Regional: true, Build: buildQ7},
	{Name: "nexmark-q8", Description: "Nexmark q8: persons who opened an auction in the 10 s window they registered in", Regional: true, Build: buildQ8},
}

func init() {
	for _, q := range Queries {
		perf.Register(perf.Workload{Name: q.Name, Description: q.Description, Build: workload(q)})
	}
}

// workload adapts a Query to perf.Options: Seed, Count and Rate configure
// the generator; Channels the region (default: the cores left over by the
// source and merger stages, at least 1, at most 4).
func workload(q Query) func(perf.Options) (*plan.Job, error) {
	return func(opt perf.Options) (*plan.Job, error) {
		gen, err := NewGenerator(Config{Seed: opt.Seed, Count: opt.Count, Rate: opt.Rate})
		if err != nil {
			return nil, err
		}
		ch := opt.Channels
		if ch <= 0 {
			ch = min(4, max(1, runtime.UsableCores()-2))
		}
		return q.Build(gen, ch, &Discard{})
	}
}

// eventTime is every query's event time: date_time, in order (the
// generator's event time never goes back), so the watermark follows the
// largest date_time seen.
var eventTime = plan.EventTime{Field: "date_time"}

func buildQ0(gen *Generator, _ int, sink core.Sink) (*plan.Job, error) {
	return &plan.Job{Name: "nexmark-q0", Source: gen, EventTime: eventTime, Sink: sink}, nil
}

func bidsOnly(in *core.Schema) (core.OperatorDef, error) {
	return ops.Filter("bids", fmt.Sprintf("kind == %d", Bid), in, nil)
}

func buildQ1(gen *Generator, _ int, sink core.Sink) (*plan.Job, error) {
	f, err := bidsOnly(Schema)
	if err != nil {
		return nil, err
	}
	m, err := ops.Map("euros", []ops.MapField{
		{Name: "auction", Expr: "auction"},
		{Name: "bidder", Expr: "bidder"},
		{Name: "price", Expr: "price * 0.908"},
		{Name: "date_time", Expr: "date_time"},
	}, false, f.Out, nil)
	if err != nil {
		return nil, err
	}
	return &plan.Job{Name: "nexmark-q1", Source: gen, EventTime: eventTime, Pre: []core.OperatorDef{f, m}, Sink: sink}, nil
}

func buildQ2(gen *Generator, _ int, sink core.Sink) (*plan.Job, error) {
	f, err := ops.Filter("q2", fmt.Sprintf("kind == %d && auction %% 123 == 0", Bid), Schema, nil)
	if err != nil {
		return nil, err
	}
	p, err := ops.Project("auction-price", []string{"auction", "price"}, f.Out)
	if err != nil {
		return nil, err
	}
	return &plan.Job{Name: "nexmark-q2", Source: gen, EventTime: eventTime, Pre: []core.OperatorDef{f, p}, Sink: sink}, nil
}

func buildQ5(gen *Generator, channels int, sink core.Sink) (*plan.Job, error) {
	f, err := bidsOnly(Schema)
	if err != nil {
		return nil, err
	}
	p, err := ops.Project("auction", []string{"auction"}, f.Out)
	if err != nil {
		return nil, err
	}
	w, err := window.New(window.Spec{Name: "bids-per-auction", Key: []string{"auction"}, Size: Q5Size, Slide: Q5Slide,
		Aggs: []window.Agg{{Name: "bids", Func: window.Count}}, Groups: kvstate.DefaultGroups}, p.Out)
	if err != nil {
		return nil, err
	}
	m, err := MaxPerWindow("hottest", "window_end", "bids", w.Out)
	if err != nil {
		return nil, err
	}
	return &plan.Job{Name: "nexmark-q5", Source: gen, EventTime: eventTime,
		Pre:    []core.OperatorDef{f, p},
		Region: &plan.Region{Channels: channels, Key: []string{"auction"}, Groups: kvstate.DefaultGroups, Ops: []core.OperatorDef{w}},
		Post:   []core.OperatorDef{m}, Sink: sink}, nil
}

func buildQ7(gen *Generator, channels int, sink core.Sink) (*plan.Job, error) {
	f, err := bidsOnly(Schema)
	if err != nil {
		return nil, err
	}
	p, err := ops.Project("bid", []string{"auction", "bidder", "price", "date_time"}, f.Out)
	if err != nil {
		return nil, err
	}
	t, err := TopBids("top-bids", Q7Size, p.Out)
	if err != nil {
		return nil, err
	}
	m, err := MaxPerWindow("highest", "window_end", "price", t.Out)
	if err != nil {
		return nil, err
	}
	return &plan.Job{Name: "nexmark-q7", Source: gen, EventTime: eventTime,
		Pre:    []core.OperatorDef{f, p},
		Region: &plan.Region{Channels: channels, Ops: []core.OperatorDef{t}},
		Post:   []core.OperatorDef{m}, Sink: sink}, nil
}

func buildQ8(gen *Generator, channels int, sink core.Sink) (*plan.Job, error) {
	j, err := NewUsers("new-users", Q8Size, kvstate.DefaultGroups)
	if err != nil {
		return nil, err
	}
	return &plan.Job{Name: "nexmark-q8", Source: gen, EventTime: eventTime,
		Pre:    []core.OperatorDef{Sellers("sellers")},
		Region: &plan.Region{Channels: channels, Key: []string{"person"}, Groups: kvstate.DefaultGroups, Ops: []core.OperatorDef{j}},
		Sink:   sink}, nil
}
