// Package formats reads and writes the file formats of Ray Data as Arrow records: Parquet, CSV,
// line-delimited JSON, and whole binary files (read only). It knows nothing of ray; package data
// drives it:
//
//  1. Expand turns user paths (files, directories, globs with "**") into a sorted list of files,
//     skipping hidden entries ("." and "_" prefixes) in directories, as Ray does.
//  2. Plan turns files into read units: one per file, or for Parquet runs of consecutive row
//     groups so that there are about `parallelism` units (reading only the footers).
//  3. Read, inside a read task, decodes one unit and emits blocks of at most TargetBlockBytes
//     (measured by RecordBytes; batches are concatenated or cut by rows to reach it), with the
//     projection and the optional "path" column applied. A block owns compact buffers: a small
//     slice of a large batch is copied rather than pinning the batch.
//  4. WriteFile writes the blocks of one output file, named with FileName, atomically and
//     without replacing an existing file.
//
// # Errors
//
// Every error starts with "data: " and names the file, and where known the line (CSV, JSON) or
// row group (Parquet): `data: reading /x/a.csv: line 17: column "a": cannot read "x" as int64`.
// The CSV line of a conversion error is found by reading the file again after the failure.
// Transient I/O errors (EINTR, EAGAIN, timeouts; see IsTransient) are retried 3 times with a
// short backoff at the level of single reads, so a retry never duplicates rows. Panics of the
// Parquet decoder on corrupt files become errors; for that reason columns are decoded on the
// calling goroutine (pqarrow's Parallel mode would panic on its own goroutines).
//
// # JSON
//
// JSON files hold one object per line. Without a schema it is inferred from the first 1000
// non-empty lines: numbers that are all integral -> int64, else float64; strings -> utf8; bools
// -> bool; null-only -> null (Arrow's null type, as pyarrow; Ray Data gives it the type of other
// files or blocks where they meet); arrays of one kind -> list<that>; nested objects -> struct
// (recursively); fields in first-seen order. All inferred fields are nullable (as in pyarrow), so
// that files whose first lines happen to have no nulls or missing keys get the same schema as
// the others. A key with values of two kinds is an error that names the key (with its path,
// "a.b", and "a[]" for list elements), the two types, and asks for a schema. Values are decoded
// by a direct decoder for these types (about 3.5x array.NewJSONReader, and exact for all int64
// values); other schema types go through Arrow's RecordBuilder.UnmarshalJSON. WriteFile writes
// nulls as null, binary as base64, nested values as nested JSON, and floats always with a
// decimal point or exponent (NaN and infinities as null).
//
// # CSV
//
// CSV uses the arrow/csv reader and writer. "", "NULL" and "null" read as null in non-string
// columns; strings keep them (so a null string written as an empty field reads back as "").
// Struct, map and union columns cannot be written as CSV. The writer prints a whole float64
// without a decimal point (1.0 as "1"), so a float column whose values are all whole reads
// back as int64 when the schema is inferred, as pyarrow's does; pass the schema (Schema) to
// keep float64.
//
// # Parquet
//
// Parquet goes through pqarrow; files are written with the Arrow schema stored in them, one row
// group per ParquetRowGroupRows rows, snappy by default. The "PARQUET:field_id" = "-1"
// placeholder metadata that pqarrow adds on read is removed, so the schema read equals the
// schema written.
package formats
