package core

// Chain is a sequence of fused operators run on one goroutine: each
// operator's emitter calls the next operator directly, batch by batch
// (docs/ARCHITECTURE.md, "Stages and data flow": operators inside a stage
// are fused; rings exist only at stage boundaries). The last emitter hands
// batches to the stage's output.
type Chain struct {
	ops      []Operator
	outs     []*Emitter
	counters []*Counters
	final    func(*Batch) error
}

// NewChain fuses ops; outSchemas[i] is ops[i]'s output schema and
// counters[i] its counters (shared by the instances of all channels).
// final receives every batch leaving the last operator, with ownership.
func NewChain(ops []Operator, outSchemas []*Schema, counters []*Counters, final func(*Batch) error) *Chain {
	c := &Chain{ops: ops, counters: counters, final: final, outs: make([]*Emitter, len(ops))}
	for i := range ops {
		next := i + 1
		c.outs[i] = NewEmitter(outSchemas[i], func(b *Batch) error { return c.push(next, b) }, counters[i])
	}
	return c
}

// Push feeds a data or marker batch into the head of the chain and takes
// ownership of it. Markers pass through every operator (Watermark and
// Finish are called on the way) and reach final in FIFO order after every
// record that was pushed before them.
func (c *Chain) Push(b *Batch) error { return c.push(0, b) }

func (c *Chain) push(i int, b *Batch) error {
	if i == len(c.ops) {
		return c.final(b)
	}
	op, out := c.ops[i], c.outs[i]
	out.stamp = b.Stamp
	var err error
	switch b.Kind {
	case Data:
		if b.Len == 0 {
			b.Release()
			return nil
		}
		if c.counters[i] != nil {
			c.counters[i].In.Add(int64(b.Len))
		}
		out.forwarded = nil
		err = op.Process(b, out)
		if out.forwarded != b {
			b.Release()
		}
		if err != nil {
			return err
		}
		return out.Flush()
	case Watermark:
		err = op.Watermark(b.Watermark, b.MarkSeq, out)
	case End:
		err = op.Finish(b.MarkSeq, out)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		b.Release()
		return err
	}
	return c.push(i+1, b)
}
