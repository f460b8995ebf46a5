package nexmark

import (
	"context"
	"fmt"
	"io"
	"time"

	"streamd/core"
)

// Id bases and ratios of Beam's generator (GeneratorConfig and the model
// generators of org.apache.beam.sdk.nexmark.sources.generator).
const (
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	NumCategories   = 5
	// hotStride: a hot auction, seller or bidder is the last one created
	// rounded down to a multiple of 100 (Beam's HOT_*_RATIO constants).
	hotStride = 100
	// personLead and auctionLead let a random person or auction id run a
	// little ahead of the last one created, as in Beam.
	personLead  = 10
	auctionLead = 10
)

// DefaultBaseTime is the event time of event 0: 2015-07-15T00:00:00Z, the
// Flink Nexmark generator's base time, in ns since the epoch.
const DefaultBaseTime = 1436918400 * int64(time.Second)

// Config parameterises the generator. The zero value of every field but
// Seed means its default.
type Config struct {
	// Seed selects the event stream; the same Config gives the same events.
	Seed uint64
	// Count is the number of events (≤ 0: unbounded).
	Count int64
	// Rate, if > 0, paces the source at this many events/s of wall time
	// (open loop); 0 generates as fast as the consumer takes them.
	Rate float64
	// InterEventDelay is the event time between consecutive events, in ns
	// (default 10 µs: 100 000 events per second of event time).
	InterEventDelay int64
	// BaseTime is event 0's event time, in ns since the epoch (default
	// DefaultBaseTime).
	BaseTime int64
	// PersonProportion, AuctionProportion and BidProportion: out of every
	// total events, the first PersonProportion are persons, the next
	// AuctionProportion auctions, the rest bids (default 1, 3, 46).
	PersonProportion, AuctionProportion, BidProportion int64
	// ActivePeople is how many of the most recent persons a non-hot seller
	// or bidder is drawn from (default 1000).
	ActivePeople int64
	// InFlightAuctions is how many of the most recent auctions a non-hot
	// bid goes to (default 100).
	InFlightAuctions int64
	// HotAuctionRatio, HotSellerRatio and HotBidderRatio: a bid goes to a
	// hot auction with probability 1 - 1/HotAuctionRatio (default 2), an
	// auction has a hot seller with probability 1 - 1/HotSellerRatio
	// (default 4), a bid a hot bidder with 1 - 1/HotBidderRatio (default 4).
	HotAuctionRatio, HotSellerRatio, HotBidderRatio int
	// AuctionLength is the mean event time an auction stays open, in ns
	// (default 10 s): expires is date_time + uniform(0.5, 1.5) × length.
	AuctionLength int64
}

func (c *Config) defaults() {
	if c.InterEventDelay <= 0 {
		c.InterEventDelay = 10 * int64(time.Microsecond)
	}
	if c.BaseTime == 0 {
		c.BaseTime = DefaultBaseTime
	}
	if c.PersonProportion <= 0 && c.AuctionProportion <= 0 && c.BidProportion <= 0 {
		c.PersonProportion, c.AuctionProportion, c.BidProportion = 1, 3, 46
	}
	if c.ActivePeople <= 0 {
		c.ActivePeople = 1000
	}
	if c.InFlightAuctions <= 0 {
		c.InFlightAuctions = 100
	}
	if c.HotAuctionRatio <= 0 {
		c.HotAuctionRatio = 2
	}
	if c.HotSellerRatio <= 0 {
		c.HotSellerRatio = 4
	}
	if c.HotBidderRatio <= 0 {
		c.HotBidderRatio = 4
	}
	if c.AuctionLength <= 0 {
		c.AuctionLength = 10 * int64(time.Second)
	}
}

// Generator is the Nexmark event source: a core.Source of Schema. Event n
// (0-based) is a person, an auction or a bid by n mod (total proportion),
// has event time BaseTime + n × InterEventDelay and input position n+1.
// Next is not safe for concurrent use (one source goroutine drives it);
// ReadBlock is, for different blocks.
type Generator struct {
	cfg   Config
	total int64
	n     int64 // next event number
	start time.Time
	timer *time.Timer
}

// NewGenerator returns a generator for cfg (defaults filled in). It fails
// on negative proportions or a total of zero.
func NewGenerator(cfg Config) (*Generator, error) {
	cfg.defaults()
	if cfg.PersonProportion < 1 || cfg.AuctionProportion < 1 || cfg.BidProportion < 0 {
		return nil, fmt.Errorf("nexmark: proportions %d:%d:%d: persons and auctions must be at least 1, bids at least 0",
			cfg.PersonProportion, cfg.AuctionProportion, cfg.BidProportion)
	}
	return &Generator{cfg: cfg, total: cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion}, nil
}

// Config returns the configuration with defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Schema implements core.Source.
func (g *Generator) Schema() *core.Schema { return Schema }

// Size implements core.Sized for a finite generator (0 if unbounded).
func (g *Generator) Size() int64 { return max(g.cfg.Count, 0) }

// Close implements core.Source; it does nothing.
func (g *Generator) Close() error { return nil }

// Next implements core.Source: a batch of up to core.BatchSize events, owned
// by the caller. Flat out it fills whole batches. With a Rate it returns the
// events whose intended send time (start + n/Rate) has passed, waiting for
// the first one if none has, and sets Batch.Stamp to the oldest one's
// intended send time (latency without coordinated omission). It returns
// io.EOF after Count events and ctx.Err() when ctx is done. In steady state
// it allocates nothing.
func (g *Generator) Next(ctx context.Context) (*core.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := int64(core.BatchSize)
	if g.cfg.Count > 0 {
		k = min(k, g.cfg.Count-g.n)
		if k <= 0 {
			return nil, io.EOF
		}
	}
	var stamp int64
	if g.cfg.Rate > 0 {
		if g.start.IsZero() {
			g.start = time.Now()
		}
		due := g.due(g.n)
		if wait := time.Until(due); wait > 0 {
			if err := g.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		// Events due by now: n ≤ elapsed × rate.
		ready := int64(float64(time.Since(g.start).Nanoseconds())*g.cfg.Rate/1e9) + 1 - g.n
		k = max(1, min(k, ready))
		stamp = due.UnixNano()
	}
	b := core.NewBatch(Schema)
	for range k {
		g.fill(b.Append(0, 0, 0, g.n+1), g.n) // Append's fields are zero
		g.n++
	}
	b.Stamp = stamp
	return b, nil
}

// BlockEvents is the number of events in a block of a generator read by
// several source workers (core.Splittable): a multiple of core.BatchSize,
// so that blocks end where Next's batches end.
const BlockEvents = 16 * core.BatchSize

// Blocks implements core.Splittable: event blocks of BlockEvents, the last
// one partial; -1 (unbounded) without a Count; 0 (not by blocks) with a
// Rate, whose batches follow the clock.
func (g *Generator) Blocks() int {
	switch {
	case g.cfg.Rate > 0:
		return 0
	case g.cfg.Count <= 0:
		return -1
	}
	return int((g.cfg.Count + BlockEvents - 1) / BlockEvents)
}

// BlockStart is the number of events before block b (core.BlockStarts).
func (g *Generator) BlockStart(b int) int64 {
	n := int64(b) * BlockEvents
	if g.cfg.Count > 0 {
		n = min(n, g.cfg.Count)
	}
	return n
}

// ReadBlock implements core.Splittable: events b·BlockEvents … in Next's
// batches of core.BatchSize. Every event is a function of its number, so
// blocks can be made concurrently; ReadBlock does not move Next.
func (g *Generator) ReadBlock(ctx context.Context, b int, errs *core.ErrorPolicy, emit func(*core.Batch) error) error {
	n, end := int64(b)*BlockEvents, int64(b+1)*BlockEvents
	if g.cfg.Count > 0 {
		end = min(end, g.cfg.Count)
	}
	for n < end {
		if err := ctx.Err(); err != nil {
			return err
		}
		bt := core.NewBatch(Schema)
		for k := min(int64(core.BatchSize), end-n); k > 0; k-- {
			g.fill(bt.Append(0, 0, 0, n+1), n)
			n++
		}
		if err := emit(bt); err != nil {
			return err
		}
	}
	return nil
}

// due is event n's intended send time under Rate.
func (g *Generator) due(n int64) time.Time {
	return g.start.Add(time.Duration(float64(n) * 1e9 / g.cfg.Rate))
}

func (g *Generator) sleep(ctx context.Context, d time.Duration) error {
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		g.timer.Stop()
		return ctx.Err()
	case <-g.timer.C:
		return nil
	}
}

// Event writes event n's fields into row (Schema.Width() values; every
// field is written, unused ones zeroed).
func (g *Generator) Event(row []core.Value, n int64) {
	clear(row)
	g.fill(row, n)
}

// fill writes event n's used fields into row, whose fields are zero.
func (g *Generator) fill(row []core.Value, n int64) {
	_ = row[width-1]
	c := &g.cfg
	r := rng{s: c.Seed*0xd1342543de82ef95 ^ uint64(n)*0x9e3779b97f4a7c15}
	r.next()
	t := c.BaseTime + n*c.InterEventDelay
	row[FDateTime] = core.TimeValue(t)
	switch rem := n % g.total; {
	case rem < c.PersonProportion:
		row[FKind] = core.IntValue(Person)
		row[FID] = core.IntValue(g.lastPerson(n) + FirstPersonID)
		x := r.next()
		row[FName] = core.StringValue(names[x&(tableSize-1)])
		row[FEmail] = core.StringValue(emails[(x>>10)&(tableSize-1)])
		row[FCreditCard] = core.StringValue(creditCards[(x>>20)&(tableSize-1)])
		row[FCity] = core.StringValue(cities[int((x>>30)&0xffff)%len(cities)])
		row[FState] = core.StringValue(states[int((x>>46)&0xffff)%len(states)])
	case rem < c.PersonProportion+c.AuctionProportion:
		row[FKind] = core.IntValue(Auction)
		row[FID] = core.IntValue(g.lastAuction(n) + FirstAuctionID)
		var seller int64
		if r.intn(c.HotSellerRatio) > 0 {
			seller = g.lastPerson(n) / hotStride * hotStride
		} else {
			seller = g.nextPerson(n, &r)
		}
		row[FSeller] = core.IntValue(seller + FirstPersonID)
		row[FCategory] = core.IntValue(FirstCategoryID + int64(r.intn(NumCategories)))
		x := r.next()
		initial := price(x)
		row[FInitialBid] = core.IntValue(initial)
		row[FReserve] = core.IntValue(initial + price(x>>28))
		row[FItemName] = core.StringValue(itemNames[(x>>56)&(tableSize-1)])
		row[FExpires] = core.TimeValue(t + c.AuctionLength/2 + r.int64n(c.AuctionLength))
	default:
		row[FKind] = core.IntValue(Bid)
		var auction, bidder int64
		if r.intn(c.HotAuctionRatio) > 0 {
			auction = g.lastAuction(n) / hotStride * hotStride
		} else {
			auction = g.nextAuction(n, &r)
		}
		if r.intn(c.HotBidderRatio) > 0 {
			bidder = g.lastPerson(n)/hotStride*hotStride + 1
		} else {
			bidder = g.nextPerson(n, &r)
		}
		row[FAuction] = core.IntValue(auction + FirstAuctionID)
		row[FBidder] = core.IntValue(bidder + FirstPersonID)
		x := r.next()
		row[FPrice] = core.IntValue(price(x))
		ch := (x >> 28) & (tableSize - 1)
		row[FChannel] = core.StringValue(channelNames[ch])
		row[FURL] = core.StringValue(channelURLs[ch])
	}
}

// lastPerson is the base-0 id of the last person created at or before
// event n (-1 … never: event 0 is a person).
func (g *Generator) lastPerson(n int64) int64 {
	epoch, off := n/g.total, n%g.total
	if off >= g.cfg.PersonProportion {
		off = g.cfg.PersonProportion - 1
	}
	return epoch*g.cfg.PersonProportion + off
}

// lastAuction is the base-0 id of the last auction created at or before
// event n (-1 before the first one).
func (g *Generator) lastAuction(n int64) int64 {
	p, a := g.cfg.PersonProportion, g.cfg.AuctionProportion
	epoch, off := n/g.total, n%g.total
	switch {
	case off < p:
		epoch--
		off = a - 1
	case off >= p+a:
		off = a - 1
	default:
		off -= p
	}
	return epoch*a + off
}

// nextPerson draws a base-0 person id among the ActivePeople most recent,
// running up to personLead past the last one (a person not yet created, as
// in Beam).
func (g *Generator) nextPerson(n int64, r *rng) int64 {
	num := g.lastPerson(n) + 1
	active := min(num, g.cfg.ActivePeople)
	return num - active + r.int64n(active+personLead)
}

// nextAuction draws a base-0 auction id among the InFlightAuctions most
// recent, running up to auctionLead past the last one.
func (g *Generator) nextAuction(n int64, r *rng) int64 {
	last := g.lastAuction(n)
	lo := max(last-g.cfg.InFlightAuctions, 0)
	return lo + r.int64n(max(last, 0)-lo+1+auctionLead)
}
