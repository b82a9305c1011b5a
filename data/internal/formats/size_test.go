package formats

import "testing"

func TestRecordBytes(t *testing.T) {
	mem := checkedMem(t)
	rec := recordFromJSON(t, mem, fullSchema, fullRows)
	defer rec.Release()
	// i: 3*8, f: 3*8, s: 4*4 + 1+0+17 bytes, b: 1, l: 4*4 + 2*8 (+1 validity), st: a 3*8, b 4*4+2 (+1 each)
	// plus one validity byte per column.
	want := int64(3*8+1) + (3*8 + 1) + (4*4 + 18 + 1) + (1 + 1) + (4*4 + 1 + 2*8 + 1) + (1 + 3*8 + 1 + 4*4 + 2 + 1)
	if got := RecordBytes(rec); got != want {
		t.Fatalf("RecordBytes = %d, want %d", got, want)
	}
	// Parts of a slice add up to no less than the whole.
	var parts int64
	for i := int64(0); i < 3; i++ {
		s := rec.NewSlice(i, i+1)
		parts += RecordBytes(s)
		s.Release()
	}
	if parts < RecordBytes(rec) {
		t.Fatalf("parts %d < whole %d", parts, RecordBytes(rec))
	}
	s := rec.NewSlice(2, 3)
	defer s.Release()
	// Row 2: i 8, f 8, s 8+17, b 1, l 8+0, st 8+1+8+1... each with a validity byte.
	if got := RecordBytes(s); got >= RecordBytes(rec) || got <= 0 {
		t.Fatalf("slice bytes %d", got)
	}
	if ArrayBytes(s.Column(0)) != 8+1 {
		t.Fatalf("ArrayBytes of one int64 = %d", ArrayBytes(s.Column(0)))
	}
}
