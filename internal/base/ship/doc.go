// Package ship moves code to the machines of a cluster: a joining driver's executable, and
// the program and working directory of `rayctl job submit`, as content-addressed blobs
// (named by their sha256) in the GCS. No path has to exist on the other machines.
//
// # Why the GCS, and how it stays small
//
// Every process of a cluster already reaches the GCS, with the cluster's mutual TLS and its
// roles, and rayctl (which has no data port and exits after submitting) can write it too;
// serving the bytes from the driver's node would leave rayctl's uploads without a home and
// add a second path. The costs etcd imposes are met like this:
//
//   - Requests: the content is compressed with zstd and cut into chunk keys of at most
//     ChunkBytes (1 MiB), each its own request, far below etcd's 1.5 MiB limit.
//   - Size: a blob is stored once per hash, whatever the number of jobs that use it: an
//     uploader first looks for a complete copy (the record blobs/m/<sha256>) and joins it;
//     two that race both write chunks under their own lease, one records its copy with a
//     create-only transaction, the other revokes its lease (its chunks go) and joins.
//     Go executables compress to about a third, so a 30 MiB driver costs about 10 MiB of
//     etcd while a job that uses it runs, and nothing after.
//   - Lifetime: a blob's record and chunks are all on one lease of its own (TTL, 20 s).
//     Every holder keeps that lease alive (Hold: a joining driver, until its node stops);
//     when the last stops, etcd deletes the keys within TTL, with no sweeper and no
//     reference counts to get wrong. An uploader that dies half-way leaves nothing behind
//     for longer than TTL. A holder whose lease is lost (a GCS outage longer than TTL)
//     uploads again. Upload (rayctl, which exits) puts a blob on a lease of a given TTL
//     without keeping it: the head fetches it within seconds, and the GCS lets it go when
//     the TTL runs out. The compactor (package gcs) drops the old revisions.
//
// # Verification and bounds
//
// Fetch trusts nothing it reads: the record must describe a blob (DecodeMeta; a fuzz
// target), at most the caller's limit; every chunk must exist, be at most ChunkBytes and
// stay within the recorded stored size; the zstd decoder's window is at most 8 MiB and its
// memory the recorded size; the decoded bytes must be exactly the recorded size and hash
// to the blob's name. Memory is one chunk plus the decoder's window, whatever the GCS
// holds. Cache.Path writes a fetch to a temporary file and renames it into place (mode
// 0700 in a 0700 directory, <session>/bin/<sha256> on an agent) only after Fetch verified
// it, and hashes a cached file again before every use, so unverified bytes never run.
// Cache eviction is least-recently-used by size (Cache.MaxBytes), files in use excepted.
//
// # Working directories
//
// PackDir makes a deterministic tar+zstd archive of a directory (regular files and
// directories; symbolic links followed and packed as what they point to, so the archive
// holds none; at most MaxDirBytes of content, MaxDirFiles entries, MaxArchiveBytes
// compressed) and Unpack extracts one into a directory that must not exist yet, through a
// temporary sibling renamed into place only when the whole archive was good: a path that
// would leave the directory, a link, a device, a duplicate name or a limit exceeded
// refuses the archive (FuzzUnpack).
//
// This package depends on internal/base/gcs, klauspost/compress and the standard library.
package ship
