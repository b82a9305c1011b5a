package formats

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// binarySchema is the schema of a Binary read: one row per file.
var binarySchema = arrow.NewSchema([]arrow.Field{{Name: "bytes", Type: arrow.BinaryTypes.Binary}}, nil)

func readBinary(path string, mem memory.Allocator, sink func(arrow.Record) error) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("data: reading %s: %w", path, err)
	}
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	b.Append(data)
	col := b.NewArray()
	defer col.Release()
	return sink(array.NewRecord(binarySchema, []arrow.Array{col}, 1))
}
