package runtime

import "streamd/kvstate"

// A change point is where a source path may place changes (control
// requests, the region's own controller's decisions, rebalance steps):
// the single source stage between two of its batches, where each change
// goes at once, at the splitter's next sequence number; the exchange
// before the next block no worker has started (blockPoint, x.mu held),
// where one change at a time is placed and each worker takes it up at
// that block (rescale.go; docs/ARCHITECTURE.md, "Live channel changes").
// serveChanges is the order both serve them in.
type changePoint interface {
	// serve serves the control plane's queued requests there and says
	// whether one took the point (then, at a point that takes one change,
	// nothing else goes there); an error is fatal.
	serve() (placed bool, err error)
	// table is the key-group table in force there (nil: not keyed).
	table() *kvstate.Table
	// rebalance carries out a rebalance step to table there.
	rebalance(table *kvstate.Table) error
}

// serveChanges serves, at point p, the changes that may go there, in
// this order: the control plane's queued requests, the region's own
// controller (its decisions are requests, served at once), then a
// rebalance step the balancer asks for. At a point of the single source
// stage (between) each of them goes in turn; at one of the exchange, the
// first placed takes the point. An error is fatal: the source path stops.
func (r *run) serveChanges(p changePoint, between bool) error {
	placed := false
	var err error
	if r.ctl.queued.Load() != 0 {
		placed, err = p.serve()
	}
	taken := placed && !between
	if r.own != nil && !taken && err == nil && r.own.next(r, between) {
		placed, err = p.serve()
		taken = placed && !between
	}
	if r.bal != nil && !taken && err == nil {
		if t := r.bal.next(r, p.table()); t != nil {
			err = p.rebalance(t)
		}
	}
	return err
}

// The single source stage's change point: between two of its batches.

func (s *sourceStage) serve() (bool, error)             { return true, s.serveControl() }
func (s *sourceStage) table() *kvstate.Table            { return s.sp.table }
func (s *sourceStage) rebalance(t *kvstate.Table) error { return s.rebalanceStep(t) }

// blockPoint is the exchange's change point: before block next, which no
// worker has started (x.mu held).
type blockPoint struct {
	x    *exchange
	next int
}

func (p blockPoint) serve() (bool, error) { return p.x.r.placeControl(p.next) }

func (p blockPoint) table() *kvstate.Table { return p.x.configs[len(p.x.configs)-1].table }

// rebalance places a rebalance step at the newest routing's channel
// count.
func (p blockPoint) rebalance(t *kvstate.Table) error {
	return p.x.placeChange(p.x.configs[len(p.x.configs)-1].channels(), p.next, t)
}
