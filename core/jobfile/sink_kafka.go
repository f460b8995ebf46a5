package jobfile

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"streamd/core"
	"streamd/core/sink"
)

// KafkaSinkSpec writes records to a Kafka topic (sink.Kafka).
type KafkaSinkSpec struct {
	Brokers []string `yaml:"brokers"`
	Topic   string   `yaml:"topic"`
	// Key is an expression over the sink's fields: each record's key
	// (its text), none when null or absent.
	Key string `yaml:"key,omitempty"`
	// Format is json (the default) or csv.
	Format    string `yaml:"format"`
	Delimiter string `yaml:"delimiter,omitempty"`
	// Headers are name: expression, added to every record.
	Headers yaml.MapSlice `yaml:"headers,omitempty"`
	// Delivery is exactly_once (the default) or at_least_once; a job
	// without checkpoint: delivers at least once either way.
	Delivery string `yaml:"delivery"`
	// TransactionalID prefixes the transactional ids (exactly-once);
	// default streamd-<topic>.
	TransactionalID    string         `yaml:"transactional_id,omitempty"`
	TransactionTimeout string         `yaml:"transaction_timeout,omitempty"`
	Timeout            string         `yaml:"timeout,omitempty"`
	TLS                *KafkaTLSSpec  `yaml:"tls,omitempty"`
	SASL               *KafkaSASLSpec `yaml:"sasl,omitempty"`
}

// KafkaTLSSpec turns TLS on: the CA file to trust (default: the system's),
// a client certificate and key (both or neither), the server name to
// verify (default: the broker's host).
type KafkaTLSSpec struct {
	CA         string `yaml:"ca,omitempty"`
	Cert       string `yaml:"cert,omitempty"`
	Key        string `yaml:"key,omitempty"`
	ServerName string `yaml:"server_name,omitempty"`
}

// KafkaSASLSpec authenticates with SASL: mechanism plain, scram-sha-256 or
// scram-sha-512.
type KafkaSASLSpec struct {
	Mechanism string `yaml:"mechanism"`
	User      string `yaml:"user"`
	Password  string `yaml:"password"`
}

// Delivery values of the kafka sink.
const (
	deliveryExactlyOnce = "exactly_once"
	deliveryAtLeastOnce = "at_least_once"
)

// kafka: {brokers, topic, key, format, delimiter, headers, delivery,
// transactional_id, transaction_timeout, timeout, tls, sasl}.
func init() {
	registerSink(sinkEntry[KafkaSinkSpec]{name: "kafka", rank: 50, build: buildKafkaSink,
		output: func(k *KafkaSinkSpec) Output {
			return Output{What: "output", Where: fmt.Sprintf("kafka topic %s at %s", k.Topic, strings.Join(k.Brokers, ","))}
		},
		// At-least-once: a restore writes again to the topic what the run
		// wrote after the checkpoint, so the topic holds them twice.
		weak: func(k *KafkaSinkSpec) (string, string) {
			if k.Delivery == deliveryAtLeastOnce {
				return ".delivery", "at-least-once: a restore writes again the records written after its checkpoint; use delivery: exactly_once"
			}
			return "", ""
		},
		// A restored run may move to other brokers, credentials or
		// timeouts; what it writes, where and how, must stay.
		describe: func(k KafkaSinkSpec, _ func(string) string) KafkaSinkSpec {
			k.Brokers, k.TLS, k.SASL, k.Timeout, k.TransactionTimeout = nil, nil, nil, "", ""
			if k.Format == "" {
				k.Format = "json"
			}
			if k.Delivery == "" {
				k.Delivery = deliveryExactlyOnce
			}
			if k.TransactionalID == "" {
				k.TransactionalID = "streamd-" + k.Topic
			}
			if k.Format == "csv" && k.Delimiter == "" {
				k.Delimiter = ","
			}
			return k
		}})
}

func buildKafkaSink(b *sinkBuild, k *KafkaSinkSpec) (core.Sink, error) {
	if len(k.Brokers) == 0 {
		return nil, b.errAt("", "missing brokers (a list of host:port)")
	}
	for i, br := range k.Brokers {
		if _, port, ok := strings.Cut(br, ":"); !ok || port == "" {
			return nil, b.errAt(fmt.Sprintf(".brokers[%d]", i), "%q is not host:port", br)
		}
	}
	if k.Topic == "" {
		return nil, b.errAt("", "missing topic")
	}
	opts := sink.KafkaOptions{Brokers: k.Brokers, Topic: k.Topic, Format: k.Format, TransactionalID: k.TransactionalID}
	switch k.Format {
	case "":
		opts.Format = "json"
	case "json", "csv":
	default:
		return nil, b.errAt(".format", "format must be json or csv, not %q", k.Format)
	}
	if k.Delimiter != "" {
		r := []rune(k.Delimiter)
		if opts.Format != "csv" {
			return nil, b.errAt(".delimiter", "delimiter is for format: csv")
		}
		if len(r) != 1 {
			return nil, b.errAt(".delimiter", "delimiter must be one character, not %q", k.Delimiter)
		}
		opts.CSV.Delimiter = r[0]
	}
	switch k.Delivery {
	case deliveryExactlyOnce:
		if b.f.Spec.Checkpoint == nil {
			// Asked for by name, it cannot be given: the transactions are
			// the checkpoint epochs. (Left out, it is the default, and a
			// job without checkpoints writes at least once: validate says.)
			return nil, b.errAt(".delivery", "delivery: exactly_once needs checkpoint: (one Kafka transaction per checkpoint epoch); add a checkpoint: section, or say at_least_once")
		}
		opts.ExactlyOnce = true
	case "":
		opts.ExactlyOnce = true
	case deliveryAtLeastOnce:
	default:
		return nil, b.errAt(".delivery", "delivery must be exactly_once or at_least_once, not %q", k.Delivery)
	}
	if opts.TransactionalID == "" {
		opts.TransactionalID = "streamd-" + k.Topic
	}
	var err error
	if opts.Timeout, err = kafkaDuration(b, ".timeout", k.Timeout); err != nil {
		return nil, err
	}
	if opts.Timeout != 0 && opts.Timeout < time.Second {
		return nil, b.errAt(".timeout", "timeout must be at least 1s, not %s", k.Timeout)
	}
	if opts.TransactionTimeout, err = kafkaDuration(b, ".transaction_timeout", k.TransactionTimeout); err != nil {
		return nil, err
	}
	if k.Key != "" {
		p, err := b.f.compile(b.path+".key", k.Key, b.in)
		if err != nil {
			return nil, err
		}
		opts.Key = p
	}
	for _, it := range k.Headers {
		name := fmt.Sprint(it.Key)
		src, ok := it.Value.(string)
		if !ok {
			src = fmt.Sprint(it.Value)
		}
		p, err := b.f.compile(b.path+".headers."+name, src, b.in)
		if err != nil {
			return nil, err
		}
		opts.Headers = append(opts.Headers, sink.KafkaHeader{Name: name, Value: p})
	}
	if k.TLS != nil {
		c, err := kafkaTLS(b, k.TLS)
		if err != nil {
			return nil, err
		}
		opts.Client = append(opts.Client, kgo.DialTLSConfig(c))
	}
	if s := k.SASL; s != nil {
		if s.User == "" {
			return nil, b.errAt(".sasl", "missing user")
		}
		switch strings.ToLower(s.Mechanism) {
		case "plain":
			opts.Client = append(opts.Client, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
		case "scram-sha-256":
			opts.Client = append(opts.Client, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
		case "scram-sha-512":
			opts.Client = append(opts.Client, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
		default:
			return nil, b.errAt(".sasl.mechanism", "mechanism must be plain, scram-sha-256 or scram-sha-512, not %q", s.Mechanism)
		}
	}
	return sink.Kafka(opts)
}

// kafkaDuration parses a positive duration at sub ("": 0, the default).
func kafkaDuration(b *sinkBuild, sub, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, b.errAt(sub, "%q is not a positive duration (e.g. 30s, 10m)", v)
	}
	return d, nil
}

func kafkaTLS(b *sinkBuild, t *KafkaTLSSpec) (*tls.Config, error) {
	c := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(b.f.path(t.CA))
		if err != nil {
			return nil, b.errAt(".tls.ca", "%v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, b.errAt(".tls.ca", "%s holds no PEM certificate", t.CA)
		}
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, b.errAt(".tls", "cert and key go together")
	}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(b.f.path(t.Cert), b.f.path(t.Key))
		if err != nil {
			return nil, b.errAt(".tls.cert", "%v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// Delivery is what the job's Kafka sink promises, as streamd validate
// prints it; "" for other sinks.
func (f *File) Delivery() string {
	k, spec, ok := sinkKinds.chosen(f.Spec.Sink.sinks)
	if !ok || k.name != "kafka" {
		return ""
	}
	ks := spec.(*KafkaSinkSpec)
	switch {
	case f.Spec.Checkpoint == nil:
		return "delivery: at-least-once — the job does not checkpoint: a run started again after a failure writes its records again (add checkpoint: for exactly-once)"
	case ks.Delivery == deliveryAtLeastOnce:
		return "delivery: at-least-once — a restore writes again the records after its checkpoint"
	default:
		return "delivery: exactly-once — one Kafka transaction per checkpoint epoch, committed when its checkpoint completes: read_committed consumers see each record once"
	}
}
