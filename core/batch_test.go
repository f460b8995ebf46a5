package core

import "testing"

// Extend adds zeroed records with no event time and consecutive
// positions after what the batch holds, also into storage a released
// batch left behind.
func TestBatchExtend(t *testing.T) {
	s := MustSchema(Field{Name: "a", Type: Int64}, Field{Name: "b", Type: String})
	b := NewBatch(s)
	for i := range 300 { // dirty storage, then back to the pool
		row := b.Append(uint64(i+1), 7, 9, 3)
		row[0], row[1] = IntValue(5), StringValue("x")
	}
	b.Release()
	b = NewBatch(s)
	b.Append(1, 2, 3, 4)[0] = IntValue(42)
	b.Extend(100, 10)
	b.Extend(BatchSize, 110) // grows past the pooled capacity
	if b.Len != 101+BatchSize || len(b.Vals) != b.Len*2 || len(b.Pos) != b.Len {
		t.Fatalf("len %d, %d values, %d positions", b.Len, len(b.Vals), len(b.Pos))
	}
	if b.Row(0)[0].Int() != 42 || b.Seq[0] != 1 || b.Pos[0] != 4 {
		t.Fatalf("first record changed: %v seq %d pos %d", b.Row(0), b.Seq[0], b.Pos[0])
	}
	for i := 1; i < b.Len; i++ {
		if b.Row(i)[0] != (Value{}) || b.Row(i)[1] != (Value{}) || b.Seq[i] != 0 || b.Hash[i] != 0 || b.Time[i] != NoTime || b.Pos[i] != int64(9+i) {
			t.Fatalf("record %d: %v seq %d hash %d time %d pos %d", i, b.Row(i), b.Seq[i], b.Hash[i], b.Time[i], b.Pos[i])
		}
	}
}
