package sink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"streamd/core"
)

// Kafka output (the kafka: sink). Each record becomes one Kafka record:
// its value the record in the sink's format (a JSON object, or a CSV line
// without header; no line end), its key the key expression's text (none
// when the expression is null or not given), its headers the header
// expressions' texts. Partitions are chosen as Kafka's own clients choose
// them: murmur2 of the key, sign bit masked, modulo the partition count
// (kgo.StickyKeyPartitioner(nil)); records without a key go to a sticky
// partition.
//
// At-least-once (delivery: at_least_once, or a job that does not
// checkpoint): an idempotent producer; a barrier waits until every record
// before it is acknowledged, so a restore from that checkpoint loses
// nothing (it may repeat what came after).
//
// Exactly-once (delivery: exactly_once in a checkpointed job): a
// two-phase commit over Kafka transactions, one per checkpoint epoch,
// each under its own transactional id, <transactional_id>-<epoch>:
//
//   - Epoch e's records go to transaction e. At barrier e the sink flushes
//     it (every record acknowledged: phase one) and records its producer id
//     and epoch in the checkpoint's output manifest, then opens transaction
//     e+1 under a new id, so the next epoch's records never join e's.
//   - Commit(c) commits every flushed transaction of epochs ≤ c (phase
//     two). Until then a read_committed consumer does not see them.
//   - A restore from checkpoint r first commits the transactions r's
//     manifest lists with a raw EndTxn under their recorded producer id and
//     epoch (they were flushed before r completed, so they belong to its
//     output; a commit already made is answered as done), then fences the
//     transactional ids of epochs after r by InitProducerID, one after the
//     other until an id the broker has never seen (producer epoch 0): each
//     aborts whatever the crashed run left open under it. Every epoch opens
//     its id at once, even when it writes nothing, so the ids in use have
//     no gaps. This is Flink's Kafka sink's protocol; without KIP-939 a
//     pending transaction survives a crash only within its transaction
//     timeout, so a restore must come sooner than transaction_timeout.
//   - Close flushes and commits the last transaction. A crash after that
//     commit but before the job ends, then a restore from the last
//     checkpoint, repeats that transaction's records.
//
// One transactional id per epoch, never reused for another transaction
// of the same run, is what makes the raw commit safe: brokers before
// KIP-890 keep a producer's epoch across its transactions, so a commit
// under a reused id could commit a later transaction the restore must
// abort.

// KafkaOptions configures a Kafka sink.
type KafkaOptions struct {
	Brokers []string // bootstrap brokers, host:port
	Topic   string
	// Format is "json" or "csv" (CSV without header; CSV.Delimiter
	// applies).
	Format string
	CSV    CSVOptions
	// Key, if set, gives each record's key (its text; null: no key).
	Key Expr
	// Headers are added to every record, in order.
	Headers []KafkaHeader
	// ExactlyOnce makes a checkpointed job's output transactional (see
	// above); it does nothing in a job that does not checkpoint.
	ExactlyOnce bool
	// TransactionalID is the prefix of the transactional ids.
	TransactionalID string
	// TransactionTimeout is the transactions' timeout: the longest a
	// transaction may stay open, from its epoch's first record to its
	// commit, including a crash and restore.
	TransactionTimeout time.Duration
	// Timeout bounds connecting (Open), a barrier's flush and a commit,
	// and each record's delivery: a broker that does not answer within it
	// fails the job instead of hanging it.
	Timeout time.Duration
	// Client holds further client options (TLS, SASL).
	Client []kgo.Opt
}

// Expr is a compiled expression (eval.Program).
type Expr interface {
	Eval(row []core.Value) (core.Value, error)
	Type() core.Type
}

// KafkaHeader is a header added to every record: Value's text, or an
// empty value when it is null.
type KafkaHeader struct {
	Name  string
	Value Expr
}

// Kafka returns a sink that writes records to a Kafka topic (see above).
// Nothing connects before Open, which fails when the brokers do not answer
// within opts.Timeout or the topic does not exist.
func Kafka(opts KafkaOptions) (core.Sink, error) {
	s := &kafkaSink{opts: opts}
	switch opts.Format {
	case "json":
		s.newFormat = jsonFormatOf
	case "csv":
		o := opts.CSV
		o.Header = false
		s.newFormat = csvFormatOf(o)
	default:
		return nil, fmt.Errorf("kafka sink: unknown format %q (expected json or csv)", opts.Format)
	}
	if len(opts.Brokers) == 0 || opts.Topic == "" {
		return nil, errors.New("kafka sink: brokers and topic are required")
	}
	if s.opts.Timeout <= 0 {
		s.opts.Timeout = 30 * time.Second
	}
	if s.opts.Timeout < time.Second {
		return nil, errors.New("kafka sink: timeout under 1s") // the client's least record timeout
	}
	if s.opts.TransactionTimeout <= 0 {
		s.opts.TransactionTimeout = 10 * time.Minute
	}
	return s, nil
}

// kafkaSink is used by one goroutine, but for the delivery callbacks,
// which only set err under mu.
type kafkaSink struct {
	opts      KafkaOptions
	newFormat func() format
	format    format
	width     int
	state     state

	cl *kgo.Client // at-least-once: the producer; exactly-once: requests only

	// Exactly-once: the open transaction (its epoch's records go to it),
	// the flushed ones waiting for their checkpoints, and the manifest of
	// those (a line each).
	txn      *kafkaTxn
	pending  []*kafkaTxn
	manifest []byte
	// restoredManifest is what VerifyOutput was given.
	restoredManifest []byte

	mu  sync.Mutex
	err error // the first delivery or client error
}

// kafkaTxn is one epoch's transaction.
type kafkaTxn struct {
	epoch uint64 // the checkpoint epoch whose records it holds
	id    string // transactional id
	cl    *kgo.Client
	pid   int64
	pe    int16
}

func (s *kafkaSink) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("kafka sink %s: %w", s.opts.Topic, err)
	}
	return s.err
}

func (s *kafkaSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *kafkaSink) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

func (s *kafkaSink) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(s.opts.Brokers...),
		kgo.DefaultProduceTopic(s.opts.Topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.RecordDeliveryTimeout(s.opts.Timeout),
		kgo.ProducerLinger(0),
	}
	o = append(o, s.opts.Client...)
	return append(o, extra...)
}

// Open connects and checks the topic, for at-least-once output.
func (s *kafkaSink) Open(schema *core.Schema) error {
	if s.state != created {
		return s.fail(errors.New("opened twice"))
	}
	if err := s.open(schema); err != nil {
		return err
	}
	s.state = opened
	return nil
}

func (s *kafkaSink) open(schema *core.Schema) error {
	s.format, s.width = s.newFormat(), schema.Width()
	if _, err := s.format.open(nil, schema); err != nil {
		return s.fail(err)
	}
	cl, err := kgo.NewClient(s.clientOpts()...)
	if err != nil {
		return s.fail(err)
	}
	s.cl = cl
	// The topic is asked for by a client of its own that does not retry,
	// so that a refusal (authentication, a dial error) is reported as
	// itself, not as a timeout after retries.
	check, err := kgo.NewClient(s.clientOpts(kgo.RequestRetries(0))...)
	if err != nil {
		return s.fail(err)
	}
	defer check.Close()
	ctx, cancel := s.ctx()
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(s.opts.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, check)
	if err != nil {
		if ctx.Err() != nil {
			return s.fail(fmt.Errorf("connect to brokers %s: no answer within %v (timeout): %w", strings.Join(s.opts.Brokers, ","), s.opts.Timeout, err))
		}
		return s.fail(fmt.Errorf("connect to brokers %s: %w", strings.Join(s.opts.Brokers, ","), err))
	}
	if len(resp.Topics) != 1 {
		return s.fail(errors.New("the brokers did not describe the topic"))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return s.fail(fmt.Errorf("topic %s: %w", s.opts.Topic, err))
	}
	return nil
}

// Write produces the records of b (borrowed: their values are encoded
// before it returns). Production is asynchronous; a delivery error is
// returned by a later call. Write blocks while the client's buffer is
// full. Marker batches are ignored.
func (s *kafkaSink) Write(b *core.Batch) error {
	if err := s.failed(); err != nil {
		return err
	}
	if s.state != opened {
		return s.fail(errNotOpen)
	}
	if b.Kind != core.Data || b.Len == 0 {
		return nil
	}
	cl := s.cl
	if s.txn != nil {
		cl = s.txn.cl
	}
	// One buffer per batch: the records' values and keys point into it
	// until they are delivered.
	buf := make([]byte, 0, 64*b.Len)
	recs := make([]kgo.Record, b.Len)
	nh := len(s.opts.Headers)
	var hdrs []kgo.RecordHeader // every record's headers, nh each
	if nh > 0 {
		hdrs = make([]kgo.RecordHeader, 0, b.Len*nh)
	}
	one := &core.Batch{Kind: core.Data, Len: 1} // each record in turn, for the encoder
	w := s.width
	for i := 0; i < b.Len; i++ {
		row := b.Vals[i*w : (i+1)*w]
		start := len(buf)
		one.Vals = row
		buf = s.format.batch(buf, one)
		buf = buf[:len(buf)-1] // the line end
		end := len(buf)
		r := &recs[i]
		if s.opts.Key != nil {
			v, err := s.opts.Key.Eval(row)
			if err != nil {
				return s.fail(fmt.Errorf("key: %w", err))
			}
			if !v.IsNull() {
				buf = core.AppendText(buf, s.opts.Key.Type(), v)
				r.Key = buf[end:len(buf):len(buf)]
			}
		}
		for _, h := range s.opts.Headers {
			v, err := h.Value.Eval(row)
			if err != nil {
				return s.fail(fmt.Errorf("header %s: %w", h.Name, err))
			}
			hs := len(buf)
			if !v.IsNull() {
				buf = core.AppendText(buf, h.Value.Type(), v)
			}
			hdrs = append(hdrs, kgo.RecordHeader{Key: h.Name, Value: buf[hs:len(buf):len(buf)]})
		}
		if nh > 0 {
			r.Headers = hdrs[len(hdrs)-nh : len(hdrs) : len(hdrs)]
		}
		r.Value = buf[start:end:end]
	}
	for i := range recs {
		cl.Produce(context.Background(), &recs[i], s.delivered)
	}
	return nil
}

// delivered is the produce callback (the client's goroutines).
func (s *kafkaSink) delivered(_ *kgo.Record, err error) {
	if err != nil {
		s.fail(fmt.Errorf("deliver: %w", err))
	}
}

// flush waits until every record produced on cl is acknowledged.
func (s *kafkaSink) flush(cl *kgo.Client) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		return s.fail(fmt.Errorf("flush: %w", err))
	}
	return s.failed()
}

// Close flushes the records (exactly-once: commits every transaction) and
// closes the clients.
func (s *kafkaSink) Close() error {
	if s.state == done {
		return s.failed()
	}
	if s.state != opened {
		s.state = done
		return s.fail(errNotOpen)
	}
	s.state = done
	err := s.failed()
	if err == nil && s.txn == nil {
		err = s.flush(s.cl)
	}
	if err == nil && s.txn != nil {
		if err = s.prepare(); err == nil {
			err = s.commit(^uint64(0))
		}
	}
	if err != nil {
		s.abortAll()
		return err
	}
	s.cl.Close()
	return nil
}

// Abort drops what is not yet delivered and aborts the open transaction;
// flushed transactions stay pending (a restore commits those its
// checkpoint lists; the broker aborts the rest at their timeout).
func (s *kafkaSink) Abort() {
	if s.state == done {
		return
	}
	s.state = done
	s.abortAll()
}

func (s *kafkaSink) abortAll() {
	ctx, cancel := s.ctx()
	defer cancel()
	if s.txn != nil {
		s.txn.cl.AbortBufferedRecords(ctx)
		s.txn.cl.EndTransaction(ctx, kgo.TryAbort)
		s.txn.cl.Close()
		s.txn = nil
	}
	for _, t := range s.pending {
		t.cl.Close()
	}
	s.pending = nil
	if s.cl != nil {
		s.cl.AbortBufferedRecords(ctx)
		s.cl.Close()
	}
}

// OpenEpochs implements core.EpochSink: exactly-once output, after
// finishing what a crashed run left (see above). Without ExactlyOnce it
// is Open.
func (s *kafkaSink) OpenEpochs(schema *core.Schema, restored uint64) error {
	if !s.opts.ExactlyOnce {
		return s.Open(schema)
	}
	if s.state != created {
		return s.fail(errors.New("opened twice"))
	}
	if err := s.open(schema); err != nil {
		return err
	}
	if restored > 0 {
		if err := s.commitRestored(restored); err != nil {
			return s.fail(err)
		}
	}
	if err := s.fence(restored + 1); err != nil {
		return s.fail(err)
	}
	if err := s.begin(restored + 1); err != nil {
		return err
	}
	s.state = opened
	return nil
}

func (s *kafkaSink) txnID(epoch uint64) string {
	return s.opts.TransactionalID + "-" + strconv.FormatUint(epoch, 10)
}

// begin opens epoch's transaction under its own id.
func (s *kafkaSink) begin(epoch uint64) error {
	id := s.txnID(epoch)
	cl, err := kgo.NewClient(s.clientOpts(kgo.TransactionalID(id), kgo.TransactionTimeout(s.opts.TransactionTimeout))...)
	if err != nil {
		return s.fail(err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	// Loads the producer id: the id is in use from now on, even if the
	// epoch writes nothing (fence relies on it).
	pid, pe, err := cl.ProducerID(ctx)
	if err == nil {
		err = cl.BeginTransaction()
	}
	if err != nil {
		cl.Close()
		return s.fail(fmt.Errorf("begin transaction %s: %w", id, err))
	}
	s.txn = &kafkaTxn{epoch: epoch, id: id, cl: cl, pid: pid, pe: pe}
	return nil
}

// prepare flushes the open transaction (phase one) and moves it to the
// pending ones.
func (s *kafkaSink) prepare() error {
	t := s.txn
	if err := s.flush(t.cl); err != nil {
		return err
	}
	s.txn = nil
	s.pending = append(s.pending, t)
	s.manifest = fmt.Appendf(s.manifest[:len(s.manifest):len(s.manifest)], "%d %s %d %d\n", t.epoch, t.id, t.pid, t.pe)
	return nil
}

// Barrier implements core.EpochSink: at-least-once, every record so far
// is acknowledged; exactly-once, the epoch's transaction is flushed and
// the next epoch's opened.
func (s *kafkaSink) Barrier(epoch uint64) error {
	if err := s.failed(); err != nil {
		return err
	}
	if s.txn == nil {
		return s.flush(s.cl)
	}
	if err := s.prepare(); err != nil {
		return err
	}
	return s.begin(epoch + 1)
}

// Commit implements core.EpochSink: commits the flushed transactions of
// epochs ≤ epoch (phase two).
func (s *kafkaSink) Commit(epoch uint64) error {
	if err := s.failed(); err != nil {
		return err
	}
	if killBeforeCommit && len(s.pending) > 0 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return s.commit(epoch)
}

// killBeforeCommit is a failpoint for the crash tests of the real binary:
// with STREAMD_FAILPOINT=kafka-kill-before-commit the process kills itself
// (SIGKILL) the first time a checkpoint has completed and its transaction
// is still to be committed — the window a restore must close by committing
// it.
var killBeforeCommit = os.Getenv("STREAMD_FAILPOINT") == "kafka-kill-before-commit"

func (s *kafkaSink) commit(epoch uint64) error {
	n := 0
	for _, t := range s.pending {
		if t.epoch > epoch {
			break
		}
		ctx, cancel := s.ctx()
		err := t.cl.EndTransaction(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			return s.fail(fmt.Errorf("commit transaction %s: %w", t.id, err))
		}
		t.cl.Close()
		n++
	}
	s.pending = s.pending[n:]
	// The manifest lists the pending transactions only.
	s.manifest = nil
	for _, t := range s.pending {
		s.manifest = fmt.Appendf(s.manifest, "%d %s %d %d\n", t.epoch, t.id, t.pid, t.pe)
	}
	return nil
}

// Manifest implements core.OutputManifest: the transactions flushed and
// not yet committed, a line each (epoch, transactional id, producer id,
// producer epoch). The slice is not changed afterwards.
func (s *kafkaSink) Manifest() []byte {
	if s.txn == nil && s.pending == nil {
		return nil
	}
	m := s.manifest
	if m == nil {
		m = []byte{} // none pending: still a manifest
	}
	return m[:len(m):len(m)]
}

// VerifyOutput implements core.OutputManifest: it keeps the manifest of
// the checkpoint to restore, whose transactions OpenEpochs commits.
func (s *kafkaSink) VerifyOutput(manifest []byte, restored uint64) error {
	if _, err := parseTxnManifest(manifest); err != nil {
		return fmt.Errorf("%w: %v", core.ErrOutputDamaged, err)
	}
	s.restoredManifest = manifest
	return nil
}

// pendingTxn is one manifest line.
type pendingTxn struct {
	epoch uint64
	id    string
	pid   int64
	pe    int16
}

func parseTxnManifest(m []byte) ([]pendingTxn, error) {
	var out []pendingTxn
	for i, line := range strings.Split(strings.TrimSuffix(string(m), "\n"), "\n") {
		if line == "" {
			continue
		}
		var p pendingTxn
		if n, err := fmt.Sscanf(line, "%d %s %d %d", &p.epoch, &p.id, &p.pid, &p.pe); n != 4 || err != nil {
			return nil, fmt.Errorf("kafka output manifest line %d: %q", i+1, line)
		}
		out = append(out, p)
	}
	return out, nil
}

// commitRestored commits the transactions the restored checkpoint lists,
// with raw EndTxn requests under their recorded producer ids and epochs.
func (s *kafkaSink) commitRestored(restored uint64) error {
	txns, err := parseTxnManifest(s.restoredManifest)
	if err != nil {
		return err
	}
	for _, t := range txns {
		if t.epoch > restored {
			continue
		}
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = t.id, t.pid, t.pe, true
		err := s.retry(func(ctx context.Context) (int16, error) {
			resp, err := req.RequestWith(ctx, s.cl)
			if err != nil {
				return 0, err
			}
			return resp.ErrorCode, nil
		})
		if err != nil {
			return fmt.Errorf("restore from checkpoint %d: commit transaction %s of epoch %d: %w (was the restore later than transaction_timeout %v?)",
				restored, t.id, t.epoch, err, s.opts.TransactionTimeout)
		}
	}
	return nil
}

// fence aborts what a crashed run left open under the ids of epochs from
// on: InitProducerID on each in turn, up to the first the broker had never
// seen.
func (s *kafkaSink) fence(from uint64) error {
	for e := from; ; e++ {
		id := s.txnID(e)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(s.opts.TransactionTimeout / time.Millisecond)
		var pe int16
		err := s.retry(func(ctx context.Context) (int16, error) {
			resp, err := req.RequestWith(ctx, s.cl)
			if err != nil {
				return 0, err
			}
			pe = resp.ProducerEpoch
			return resp.ErrorCode, nil
		})
		if err != nil {
			return fmt.Errorf("fence transactional id %s: %w", id, err)
		}
		if pe == 0 {
			return nil
		}
	}
}

// retry runs a raw request until it answers, or fails with a
// non-retriable error, within the sink's timeout.
func (s *kafkaSink) retry(do func(ctx context.Context) (int16, error)) error {
	ctx, cancel := s.ctx()
	defer cancel()
	for {
		code, err := do(ctx)
		if err == nil {
			err = kerr.ErrorForCode(code)
		}
		if err == nil {
			return nil
		}
		if !kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
