package formats

import (
	"context"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// textSchema is the schema of a Text read: one row per line.
var textSchema = arrow.NewSchema([]arrow.Field{{Name: "text", Type: arrow.BinaryTypes.String}}, nil)

// readText reads the lines of path (without "\n" or "\r\n"), dropping empty ones (as Ray's
// read_text with drop_empty_lines), in batches of opt.BatchRows lines. Invalid UTF-8 is
// kept as is.
func readText(ctx context.Context, path string, opt ReadOptions, mem memory.Allocator, sink func(arrow.Record) error) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := array.NewStringBuilder(mem)
	defer b.Release()
	flush := func() error {
		col := b.NewArray()
		defer col.Release()
		return sink(array.NewRecord(textSchema, []arrow.Array{col}, int64(col.Len())))
	}
	if err := flush(); err != nil { // the schema, in case there are no lines
		return err
	}
	lr := newLineReader(f)
	rows := 0
	err = lr.each(path, func(line []byte) error {
		b.BinaryBuilder.Append(line)
		if rows++; rows == opt.BatchRows {
			rows = 0
			if err := flush(); err != nil {
				return err
			}
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rows > 0 {
		return flush()
	}
	return nil
}
