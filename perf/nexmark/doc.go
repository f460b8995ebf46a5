// Package nexmark is the Nexmark benchmark (Tucker et al., "NEXMark – A
// Benchmark for Queries over Data Streams", 2008) for streamd: a seeded,
// deterministic event generator (a core.Source) following the Apache Beam
// and Flink Nexmark generators' conventions, and queries q0, q1, q2, q5, q7
// and q8 registered as perf workloads "nexmark-q0" … "nexmark-q8".
//
// One schema for three streams: a streamd edge carries one schema, so the
// generator emits one wide event record (see Schema) whose Kind field says
// whether it is a person, an auction or a bid; the fields of the other two
// kinds are zero ("" for strings). Queries filter on Kind first.
//
// The queries (event time = date_time, watermark = largest date_time - 1
// since event time never goes back; sink: Discard):
//
//	q0  passthrough: every event, all fields.
//	q1  currency conversion: bids only (filter kind == 2), then the map
//	    auction, bidder, price = price * 0.908 (float64, as Flink's
//	    Nexmark; Beam uses price*89/100 in integers), date_time.
//	q2  selection: filter kind == 2 && auction % 123 == 0 (Beam's modulus),
//	    project auction, price.
//	q5  hot items: bids → project auction → region keyed by auction:
//	    window count of bids per auction, sliding windows of 10 s every
//	    2 s → after the merger MaxPerWindow: per window, the auction(s)
//	    with the most bids (window_start, window_end, auction, bids), by
//	    window end, then auction.
//	q7  highest bid: bids → project auction, bidder, price, date_time →
//	    round-robin region of TopBids (per channel, the bids at the
//	    channel's maximum price per tumbling 10 s window) → MaxPerWindow
//	    on price: the bid(s) at the window's maximum, by window end, then
//	    date_time, auction, bidder.
//	q8  monitor new users: persons and auctions → Sellers (person id or
//	    seller) → region keyed by person: NewUsers, per tumbling 10 s window
//	    the persons who registered in it and opened an auction in it
//	    (window_start, window_end, id, name), by window end, then id.
//
// Deviations from Beam/Flink: one wide schema instead of three streams;
// events strictly in event-time order (no out-of-order delay groups); no
// description or extra padding fields, so records are smaller than
// Nexmark's average sizes; prices are interpolated in a 4096-step table of
// Beam's log-uniform 10^(6u) dollars; strings come from fixed tables
// (1024 names, e-mails, cards, item names, channels and URLs), not random
// per event; expires = date_time + uniform[0.5, 1.5) × AuctionLength
// instead of Beam's rate-derived auction length; the PRNG is splitmix64
// seeded with (Seed, event number), so streams differ from Beam's
// java.util.Random ones. q7's TopBids keeps per-instance state, so q7 does
// not support live rescaling (q5 and q8 do).
//
// Invariants:
//
//   - The events depend only on Config (seed, proportions, delays), never on
//     batch boundaries, the rate or the wall clock: event n is computed from
//     a PRNG seeded with (Seed, n), as Beam seeds java.util.Random with the
//     event id. The same Config gives the same events.
//   - Event time (DateTime) is BaseTime + n × InterEventDelay: strictly
//     increasing, so queries run with a zero out-of-orderness bound and never
//     see late records.
//   - Generating an event allocates nothing: every string is taken from
//     tables built once at package init.
//   - Query outputs are deterministic and do not depend on the channel count:
//     windowed operators emit by window end, then key (or by the documented
//     tie order), and the tests compare 1 and 4 channels record for record.
package nexmark
