// Package deadletter reads dead-letter files (one JSON object a line, as
// core.ErrorPolicy writes them) for tests and tools.
package deadletter

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Positions reads the dead-letter file at path and returns each line's
// input position ("pos"), in file order. Blank lines are skipped. A file
// that ends in a torn line (no final newline) or holds a line that is not
// one JSON object is an error.
func Positions(path string) ([]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("dead-letter file ends in a torn line: %q", data[max(0, len(data)-40):])
	}
	var pos []int64
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var d struct{ Pos int64 }
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return nil, fmt.Errorf("dead-letter line %d %q: %w", i+1, line, err)
		}
		pos = append(pos, d.Pos)
	}
	return pos, nil
}
