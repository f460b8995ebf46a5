package ops

import (
	"fmt"
	"strings"

	"streamd/core"
)

// policy returns the error policy an instance uses: the constructor's, else
// the instance environment's; nil means fail.
func policy(errs *core.ErrorPolicy, env core.Env) *core.ErrorPolicy {
	if errs != nil {
		return errs
	}
	return env.Errors
}

// bad reports record i of b as malformed. It returns nil when the policy
// skips or dead-letters the record (the caller drops it), a
// *core.RecordError under fail.
func bad(errs *core.ErrorPolicy, name string, b *core.Batch, i int, reason error) error {
	raw := describe(b.Schema, b.Row(i))
	if errs == nil {
		return &core.RecordError{Input: name, Pos: b.Pos[i], Reason: reason}
	}
	var seq uint64
	if len(b.Seq) > i {
		seq = b.Seq[i]
	}
	return errs.BadSeq(name, b.Pos[i], seq, raw, reason)
}

// describe renders a record as name=value pairs, for dead letters.
func describe(s *core.Schema, row []core.Value) string {
	var sb []byte
	for i, f := range s.Fields {
		if i > 0 {
			sb = append(sb, ' ')
		}
		sb = append(sb, f.Name...)
		sb = append(sb, '=')
		sb = core.AppendText(sb, f.Type, row[i])
	}
	return string(sb)
}

// checkWidth rejects a batch whose records are not as wide as the schema
// the operator was built for.
func checkWidth(name string, in *core.Schema, b *core.Batch) error {
	if b.Schema.Width() != in.Width() {
		return fmt.Errorf("%s: batch of schema %s, operator bound to %s", name, b.Schema, in)
	}
	return nil
}

// splitAs splits "column" or "column as name" (as in any case).
func splitAs(s string) (col, as string, err error) {
	parts := strings.Fields(s)
	switch {
	case len(parts) == 1:
		return parts[0], parts[0], nil
	case len(parts) == 3 && strings.EqualFold(parts[1], "as"):
		return parts[0], parts[2], nil
	}
	return "", "", fmt.Errorf("%q: expected \"column\" or \"column as name\"", s)
}
