package sink

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"streamd/core"
	"streamd/internal/kafkatest"
)

// keyField is an Expr reading one string field: the sink's tests do not
// need the expression compiler.
type keyField int

func (k keyField) Eval(row []core.Value) (core.Value, error) { return row[k], nil }
func (keyField) Type() core.Type                             { return core.String }

var kafkaSchema = core.MustSchema(core.Field{Name: "k", Type: core.String}, core.Field{Name: "n", Type: core.Int64})

// kafkaBatch holds records n from..to-1, keyed k<n mod 5>.
func kafkaBatch(from, to int) *core.Batch {
	b := core.NewBatch(kafkaSchema)
	for n := from; n < to; n++ {
		row := b.Append(uint64(n), 0, 0, 0)
		row[0], row[1] = core.StringValue(fmt.Sprintf("k%d", n%5)), core.IntValue(int64(n))
	}
	return b
}

func newKafka(t *testing.T, addr, topic string, exactlyOnce bool) *kafkaSink {
	t.Helper()
	s, err := Kafka(KafkaOptions{Brokers: []string{addr}, Topic: topic, Format: "csv", Key: keyField(0),
		ExactlyOnce: exactlyOnce, TransactionalID: "test-" + topic, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*kafkaSink)
}

// crash drops the sink's clients as a killed process would: no
// transaction is ended.
func (s *kafkaSink) crash() {
	for _, t := range append(s.pending, s.txn) {
		if t != nil {
			t.cl.Close()
		}
	}
	s.cl.Close()
}

// values reads topic back read_committed: the record values, partition by
// partition.
func values(t *testing.T, addr, topic string) []string {
	t.Helper()
	var out []string
	for _, r := range kafkatest.Read(t, addr, topic) {
		out = append(out, string(r.Key)+"="+string(r.Value))
	}
	return out
}

// want is what records from..to-1 read back as: grouped by key, in order
// within a key (each key lives in one partition).
func want(ranges ...[2]int) map[string][]string {
	m := map[string][]string{}
	for _, r := range ranges {
		for n := r[0]; n < r[1]; n++ {
			k := fmt.Sprintf("k%d", n%5)
			m[k] = append(m[k], fmt.Sprintf("%s=%s,%d", k, k, n))
		}
	}
	return m
}

func byKey(vs []string) map[string][]string {
	m := map[string][]string{}
	for _, v := range vs {
		k, _, _ := strings.Cut(v, "=")
		m[k] = append(m[k], v)
	}
	return m
}

func sameByKey(t *testing.T, got []string, w map[string][]string) {
	t.Helper()
	g := byKey(got)
	if len(g) != len(w) {
		t.Fatalf("keys: got %d, want %d", len(g), len(w))
	}
	for k, ws := range w {
		if strings.Join(g[k], "|") != strings.Join(ws, "|") {
			t.Fatalf("key %s:\n got %v\nwant %v", k, g[k], ws)
		}
	}
}

// A crash after checkpoint 1 completed but before its transaction was
// committed, with epoch 2's records flushed too: the restore from
// checkpoint 1 commits transaction 1 and aborts 2's, so a read_committed
// reader sees epoch 1's records once, epoch 2's only as the restored run
// writes them again.
func TestKafkaRestoreCommitsPendingTransaction(t *testing.T) {
	c := kafkatest.New(t, 3, "out")
	addr := kafkatest.Addr(c)

	s := newKafka(t, addr, "out", true)
	if err := s.OpenEpochs(kafkaSchema, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(kafkaBatch(0, 40)); err != nil {
		t.Fatal(err)
	}
	if err := s.Barrier(1); err != nil {
		t.Fatal(err)
	}
	manifest := s.Manifest() // checkpoint 1 stores it and completes
	if err := s.Write(kafkaBatch(40, 70)); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(s.txn.cl); err != nil {
		t.Fatal(err)
	}
	s.crash() // before Commit(1)

	r := newKafka(t, addr, "out", true)
	if err := r.VerifyOutput(manifest, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.OpenEpochs(kafkaSchema, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(kafkaBatch(40, 70)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	sameByKey(t, values(t, addr, "out"), want([2]int{0, 70}))

	// A second restore from the same checkpoint (the first restored run
	// committed transaction 1 and went on): committing it again changes
	// nothing.
	r2 := newKafka(t, addr, "out", true)
	if err := r2.VerifyOutput(manifest, 1); err != nil {
		t.Fatal(err)
	}
	if err := r2.OpenEpochs(kafkaSchema, 1); err != nil {
		t.Fatal(err)
	}
	r2.Abort()
	sameByKey(t, values(t, addr, "out"), want([2]int{0, 70}))
}

// Commit makes an epoch visible; the records of the epoch after it stay
// invisible until their own commit.
func TestKafkaCommitPerEpoch(t *testing.T) {
	c := kafkatest.New(t, 2, "out")
	addr := kafkatest.Addr(c)
	s := newKafka(t, addr, "out", true)
	if err := s.OpenEpochs(kafkaSchema, 0); err != nil {
		t.Fatal(err)
	}
	for e := uint64(1); e <= 3; e++ {
		if err := s.Write(kafkaBatch(int(e-1)*10, int(e)*10)); err != nil {
			t.Fatal(err)
		}
		if err := s.Barrier(e); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(s.Manifest()), "\n"); got != 1 {
			t.Fatalf("epoch %d: %d pending transactions in the manifest, want 1", e, got)
		}
		if err := s.Commit(e); err != nil {
			t.Fatal(err)
		}
	}
	// Transaction 4 is open and empty: ended by Close.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sameByKey(t, values(t, addr, "out"), want([2]int{0, 30}))
}

// At-least-once: plain idempotent production, every record acknowledged
// by Close.
func TestKafkaAtLeastOnce(t *testing.T) {
	c := kafkatest.New(t, 3, "out")
	addr := kafkatest.Addr(c)
	s := newKafka(t, addr, "out", false)
	if err := s.Open(kafkaSchema); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(kafkaBatch(0, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sameByKey(t, values(t, addr, "out"), want([2]int{0, 100}))
}

// The key decides the partition as Kafka's Java client does (murmur2).
func TestKafkaPartitionsByMurmur2(t *testing.T) {
	c := kafkatest.New(t, 7, "out")
	addr := kafkatest.Addr(c)
	s := newKafka(t, addr, "out", false)
	if err := s.Open(kafkaSchema); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(kafkaBatch(0, 20)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The partition Kafka's Java client chooses among 7:
	// toPositive(murmur2(key)) % 7.
	for _, r := range kafkatest.Read(t, addr, "out") {
		if p := int32(murmur2(r.Key)&0x7fffffff) % 7; p != r.Partition {
			t.Fatalf("key %s in partition %d, murmur2 says %d", r.Key, r.Partition, p)
		}
	}
}

// A broker that does not answer is an error from Open within the
// timeout, not a hang.
func TestKafkaNoBroker(t *testing.T) {
	s, err := Kafka(KafkaOptions{Brokers: []string{"127.0.0.1:1"}, Topic: "out", Format: "json", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Open(kafkaSchema)
	if err == nil || !strings.Contains(err.Error(), "connect to brokers 127.0.0.1:1") {
		t.Fatalf("Open: %v, want a connection error", err)
	}
	s.Abort()
}

// A topic that does not exist is an error from Open.
func TestKafkaMissingTopic(t *testing.T) {
	c := kafkatest.New(t, 1, "out")
	s := newKafka(t, kafkatest.Addr(c), "nope", false)
	err := s.Open(kafkaSchema)
	if err == nil || !strings.Contains(err.Error(), "topic nope") {
		t.Fatalf("Open: %v, want an unknown topic", err)
	}
	s.Abort()
}

// murmur2 is Kafka's Utils.murmur2 (the Java client's key hash), written
// from it here apart from the client's.
func murmur2(data []byte) uint32 {
	const seed, m, r = 0x9747b28c, 0x5bd1e995, 24
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// intField is an Expr reading one Int64 field.
type intField int

func (k intField) Eval(row []core.Value) (core.Value, error) { return row[k], nil }
func (intField) Type() core.Type                             { return core.Int64 }

// Every record carries its headers, in order, with its own values.
func TestKafkaHeaders(t *testing.T) {
	c := kafkatest.New(t, 3, "out")
	addr := kafkatest.Addr(c)
	s, err := Kafka(KafkaOptions{Brokers: []string{addr}, Topic: "out", Format: "csv", Key: keyField(0),
		Headers: []KafkaHeader{{Name: "n", Value: intField(1)}, {Name: "key", Value: keyField(0)}}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(kafkaSchema); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(kafkaBatch(0, 50)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rs := kafkatest.Read(t, addr, "out")
	if len(rs) != 50 {
		t.Fatalf("%d records, want 50", len(rs))
	}
	for _, r := range rs {
		var n int
		if _, err := fmt.Sscanf(string(r.Value), "k%d,%d", new(int), &n); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		k := fmt.Sprintf("k%d", n%5)
		if len(r.Headers) != 2 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != fmt.Sprint(n) ||
			r.Headers[1].Key != "key" || string(r.Headers[1].Value) != k || string(r.Key) != k {
			t.Errorf("record %q key %q: headers %v", r.Value, r.Key, r.Headers)
		}
	}
}
