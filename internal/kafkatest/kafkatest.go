// Package kafkatest starts Kafka clusters for tests and scripts: kfake
// (github.com/twmb/franz-go/pkg/kfake), an in-process cluster that speaks
// the real Kafka protocol on 127.0.0.1, so that the sink is tested through
// franz-go and through other clients (kcat) as it runs against a broker.
//
// A cluster advertises the API versions of Kafka 3.9 (no KIP-890
// transaction epoch bumps, no KIP-939 two-phase InitProducerID), the
// oldest broker line the Kafka sink's exactly-once protocol is built for.
package kafkatest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Start starts a one-broker cluster on 127.0.0.1 (port 0: any free one)
// holding topics, each with partitions partitions. Close it when done.
func Start(port int, partitions int32, topics ...string) (*kfake.Cluster, error) {
	return StartWith(nil, port, partitions, topics...)
}

// StartWith is Start with further kfake options (SASL users, TLS).
func StartWith(extra []kfake.Opt, port int, partitions int32, topics ...string) (*kfake.Cluster, error) {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.MaxVersions(kversion.V3_9_0()),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	return kfake.NewCluster(append(opts, extra...)...)
}

// New starts a cluster (Start, any port) for the test and closes it when
// the test ends.
func New(t testing.TB, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	return NewWith(t, nil, partitions, topics...)
}

// NewWith is New with further kfake options (StartWith).
func NewWith(t testing.TB, extra []kfake.Opt, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := StartWith(extra, 0, partitions, topics...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Addr is the cluster's bootstrap address, host:port.
func Addr(c *kfake.Cluster) string { return c.ListenAddrs()[0] }

// Read is ReadCommitted for a test: it fails the test on an error, and
// gives up after a minute (a deadline against a hang, not a measure: a
// read takes milliseconds).
func Read(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := ReadCommitted(ctx, addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// ReadCommitted reads every committed record of topic, as a
// read_committed consumer sees them, partition by partition (records in
// offset order within a partition; partitions in order). It needs every
// transaction on the topic ended (committed or aborted): it reads up to
// each partition's high watermark, which is then the last stable offset.
func ReadCommitted(ctx context.Context, addr, topic string) ([]*kgo.Record, error) {
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	ends, err := endOffsets(ctx, admin, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]kgo.Offset{}
	left := 0
	for p, end := range ends {
		if end > 0 {
			want[p] = kgo.NewOffset().AtStart()
			left++
		}
	}
	if left == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	byPart := map[int32][]*kgo.Record{}
	done := map[int32]bool{}
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w (partitions left: %d)", topic, err, left)
		}
		for _, fe := range fs.Errors() {
			return nil, fmt.Errorf("read %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				byPart[r.Partition] = append(byPart[r.Partition], r)
			}
			if r.Offset+1 >= ends[r.Partition] && !done[r.Partition] {
				done[r.Partition] = true
				left--
			}
		})
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []*kgo.Record
	for _, p := range parts {
		out = append(out, byPart[p]...)
	}
	return out, nil
}

// endOffsets is each partition's high watermark.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		return nil, fmt.Errorf("topic %s: not found", topic)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Partition
		rp.Timestamp = -1 // the latest offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	shards := cl.RequestSharded(ctx, req)
	ends := map[int32]int64{}
	for _, sh := range shards {
		if sh.Err != nil {
			return nil, sh.Err
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, fmt.Errorf("list offsets %s[%d]: error code %d", topic, p.Partition, p.ErrorCode)
				}
				ends[p.Partition] = p.Offset
			}
		}
	}
	return ends, nil
}
