package formats

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
)

// Format is a file format that Ray Data can read and write.
type Format int

// The supported formats.
const (
	// Parquet is Apache Parquet (columnar, compressed, with row groups).
	Parquet Format = iota + 1
	// CSV is comma (or other delimiter) separated values, with a header line by default.
	CSV
	// JSON is line-delimited JSON: one object per line.
	JSON
	// Binary reads each file as one row holding its bytes.
	Binary
	// Text reads each line of a file as one row (column "text", line ends removed, empty
	// lines dropped, as Ray's read_text).
	Text
)

// String returns the format's lower-case name: "parquet", "csv", "json", "binary".
func (f Format) String() string {
	switch f {
	case Parquet:
		return "parquet"
	case CSV:
		return "csv"
	case JSON:
		return "json"
	case Binary:
		return "binary"
	case Text:
		return "text"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Ext returns the file-name extension of the format: ".parquet", ".csv", ".json", and "" for
// Binary and Text (any file).
func (f Format) Ext() string {
	switch f {
	case Parquet:
		return ".parquet"
	case CSV:
		return ".csv"
	case JSON:
		return ".json"
	}
	return ""
}

// Unit is one read task's input: a whole file, or some row groups of one Parquet file.
type Unit struct {
	// Path is the file to read.
	Path string
	// RowGroups are the Parquet row groups to read, in order; nil = the whole file.
	RowGroups []int
	// Rows is the row count known from Parquet metadata, -1 if unknown (CSV, JSON, Binary).
	Rows int64
	// Bytes is the on-disk size of this unit (for row groups, their compressed size).
	Bytes int64
	// ArrowBytes estimates the unit's size in Arrow (all columns), 0 if unknown. Parquet:
	// the column chunks' uncompressed sizes, at least the fixed-width columns' widths (an
	// underestimate for dictionary-encoded columns).
	ArrowBytes int64
}

// ReadOptions configures Read. The zero value of every field but Format is a usable default.
type ReadOptions struct {
	// Format of the file (required).
	Format Format
	// Columns is the projection, in output order; nil = all columns. Parquet reads only these
	// columns; the other formats select them after reading. A missing column is an error
	// naming the file's columns.
	Columns []string
	// Schema is the explicit schema of CSV/JSON files; nil = inferred from the first 1000
	// rows (CSV: integers -> int64, numbers -> float64, true/false -> bool, else utf8; JSON:
	// see the package documentation). Inferred fields are all nullable.
	Schema *arrow.Schema
	// Delimiter separates CSV fields; 0 means ','.
	Delimiter rune
	// NoHeader says that the CSV file has no header line; the columns are then named "f0",
	// "f1", ...
	NoHeader bool
	// IncludePath adds a "path" string column holding the file's path.
	IncludePath bool
	// TargetBlockBytes is the largest block to emit, as measured by RecordBytes (default
	// DefaultTargetBlockBytes, 128 MiB). Small batches are concatenated up to it and large
	// ones cut by rows; a single row larger than it makes a block of its own.
	TargetBlockBytes int64
	// BatchRows is the number of rows decoded at a time (default DefaultBatchRows, 64 Ki).
	// Parquet with the default: the consecutive row groups of a unit are decoded together,
	// in batches of about TargetBlockBytes as estimated from the file's metadata (the
	// unit's rows when they fit; at most 1 Mi rows), so that a unit that fits one block is
	// decoded as one batch and needs no concatenation.
	BatchRows int
}

// WriteOptions configures WriteFile.
type WriteOptions struct {
	// Format of the file (required): Parquet, CSV or JSON.
	Format Format
	// Compression of Parquet files: "snappy" (default), "zstd", "gzip" or "none".
	Compression string
	// Delimiter separates CSV fields; 0 means ','.
	Delimiter rune
	// NoHeader leaves out the CSV header line.
	NoHeader bool
}

// FileName returns the name of the i-th output file of a write:
// fmt.Sprintf("%s_%06d%s", prefix, i, f.Ext()).
func FileName(prefix string, i int, f Format) string {
	return fmt.Sprintf("%s_%06d%s", prefix, i, f.Ext())
}
