package plan

import (
	"encoding/json"
	"fmt"

	"streamd/snapshot"
)

// UpdateRecord is one change of logic a checkpoint carries: the operator
// and its entry as the update gave it. The latest per operator, in the
// order they were placed.
type UpdateRecord struct {
	Operator string `json:"operator"`
	Body     string `json:"body"`
}

// UpdatesExtra is the checkpoint metadata extra holding the updates in
// force at its barrier (JSON []UpdateRecord; absent when none).
const UpdatesExtra = "updates"

// RestoredUpdates returns the updates a checkpoint recorded, which the job
// loader builds again before a restored run starts.
func RestoredUpdates(meta *snapshot.Metadata) ([]UpdateRecord, error) {
	text := meta.Extra[UpdatesExtra]
	if text == "" {
		return nil, nil
	}
	var us []UpdateRecord
	if err := json.Unmarshal([]byte(text), &us); err != nil {
		return nil, fmt.Errorf("checkpoint's updates: %w", err)
	}
	return us, nil
}
