package data

import (
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
)

// Option configures a source, a transform or a consuming call. Each function says which
// options it reads; the others are ignored.
type Option func(*options)

type options struct {
	// transforms
	batchSize int
	poolMin   int
	poolMax   int
	cpus      float64
	cpusSet   bool
	gpus      float64
	resources map[string]float64
	// sources
	parallelism int
	columns     []string
	schema      *arrow.Schema
	delimiter   rune
	noHeader    bool
	includePath bool
	targetBytes int64
	// consumption
	prefetch    int
	shuffleBuf  int
	shuffleSeed *int64
	budget      int64
	maxTasks    int
	progress    *bool
	equal       bool
	compression string
	getAllHook  func(n int)
	// all-to-all
	seed    *int64
	shuffle *int64
	desc    []bool
	descSet bool
}

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// BatchSize sets the rows per batch: of MapBatches (each block is cut into batches of n rows,
// the last one of a block may be shorter; default: the whole block) and of IterBatches (exact
// batches across block boundaries, the last one may be shorter; default 256 rows).
func BatchSize(n int) Option { return func(o *options) { o.batchSize = n } }

// ActorPool runs MapBatches on a pool of actors (Ray's compute=ActorPoolStrategy) that starts
// with min actors and grows to max while blocks wait and every actor is busy. Each actor runs
// a BatchClass's setup once. Default: stateless tasks. An actor reserves its CPUs only while
// that leaves one task's CPUs to each unfinished task operator of the execution; otherwise it
// reserves none (Stats says how many), so that a pool cannot starve the reads that feed it.
func ActorPool(min, max int) Option { return func(o *options) { o.poolMin, o.poolMax = min, max } }

// NumCPUs sets the CPUs each task (or actor) of a transform needs (default 1).
func NumCPUs(n float64) Option { return func(o *options) { o.cpus, o.cpusSet = n, true } }

// NumGPUs sets the GPUs each task (or actor) of a transform needs (default 0).
func NumGPUs(n float64) Option { return func(o *options) { o.gpus = n } }

// Resources sets custom resources each task (or actor) of a transform needs.
func Resources(r map[string]float64) Option {
	return func(o *options) {
		o.resources = make(map[string]float64, len(r))
		for k, v := range r {
			o.resources[k] = v
		}
	}
}

// Parallelism sets the number of read tasks of a file source or Range (default: the
// cluster's CPUs, capped by the read units the files allow).
func Parallelism(n int) Option { return func(o *options) { o.parallelism = n } }

// Columns reads only these columns (file sources).
func Columns(cols ...string) Option {
	return func(o *options) { o.columns = append([]string(nil), cols...) }
}

// Schema sets the schema of CSV and JSON files instead of inferring it.
func Schema(s *arrow.Schema) Option { return func(o *options) { o.schema = s } }

// Delimiter sets the CSV field delimiter (default ',') for ReadCSV and WriteCSV.
func Delimiter(r rune) Option { return func(o *options) { o.delimiter = r } }

// NoHeader says CSV files have no header line (ReadCSV: columns are named f0, f1, ...;
// WriteCSV: no header is written).
func NoHeader() Option { return func(o *options) { o.noHeader = true } }

// IncludePath adds a "path" column with each row's file (file sources).
func IncludePath() Option { return func(o *options) { o.includePath = true } }

// TargetMaxBlockSize sets the target maximum block size in bytes of a source (default:
// Settings.TargetMaxBlockSize, 128 MiB).
func TargetMaxBlockSize(bytes int64) Option { return func(o *options) { o.targetBytes = bytes } }

// Prefetch sets how many blocks IterBatches fetches ahead of the batch being consumed
// (default 2; at least 1).
func Prefetch(n int) Option { return func(o *options) { o.prefetch = n } }

// LocalShuffleBuffer makes IterBatches (and IterRows, SplitIterator.IterBatches) shuffle
// rows locally, as Ray's local_shuffle_buffer_size: rows go into a buffer of at least n rows,
// and each batch is drawn at random from it (the buffer is shuffled when rows have been
// added and what is left of the last shuffle is down to n); at the end the buffer drains.
// The rows come out in a random order within windows of about n rows plus a block; a bigger
// buffer mixes more and holds more memory. Without LocalShuffleSeed the order differs from
// run to run.
func LocalShuffleBuffer(n int) Option { return func(o *options) { o.shuffleBuf = n } }

// LocalShuffleSeed makes LocalShuffleBuffer's shuffle deterministic: the same seed and the
// same dataset give the same batches.
func LocalShuffleSeed(seed int64) Option { return func(o *options) { o.shuffleSeed = &seed } }

// ObjectStoreBudget bounds the bytes of blocks that an execution holds (produced and not yet
// consumed, plus the expected output of running tasks). Default: Settings.ObjectStoreFraction
// of the cluster's object store memory.
func ObjectStoreBudget(bytes int64) Option { return func(o *options) { o.budget = bytes } }

// MaxTasksInFlight bounds the tasks an execution runs at once, per operator and in total
// (default: the cluster's CPUs).
func MaxTasksInFlight(n int) Option { return func(o *options) { o.maxTasks = n } }

// Progress turns the progress bars of an execution on or off (default: on when stderr is
// a terminal, unless Settings.NoProgress).
func Progress(on bool) Option { return func(o *options) { o.progress = &on } }

// Equal makes Split give every part the same number of rows (blocks are cut as needed).
func Equal() Option { return func(o *options) { o.equal = true } }

// Compression sets the Parquet compression of WriteParquet: "snappy" (default), "zstd",
// "gzip" or "none".
func Compression(c string) Option { return func(o *options) { o.compression = c } }

// Seed makes RandomShuffle (and Repartition with shuffle) deterministic: the same seed and
// the same dataset (the same blocks in the same order) give the same order of rows.
func Seed(seed int64) Option { return func(o *options) { o.seed = &seed } }

// Shuffle makes TrainTestSplit shuffle the rows (RandomShuffle with Seed(seed)) before it
// splits them (Ray's shuffle=True, seed=seed).
func Shuffle(seed int64) Option { return func(o *options) { o.shuffle = &seed } }

// Descending makes Sort descending: Descending() or Descending(true) for every key, or one
// value per key (Ray's descending=[...]).
func Descending(desc ...bool) Option {
	return func(o *options) { o.desc, o.descSet = append([]bool(nil), desc...), true }
}

// Settings are the package-wide defaults (Ray's DataContext).
type Settings struct {
	// TargetMaxBlockSize is the target maximum block size of sources (default 128 MiB).
	TargetMaxBlockSize int64
	// ObjectStoreFraction is the part of the cluster's object store memory an execution
	// may fill with blocks (default 0.25).
	ObjectStoreFraction float64
	// NoProgress turns progress bars off (they are drawn only when stderr is a terminal).
	NoProgress bool
}

var (
	settingsMu sync.Mutex
	settings   = Settings{TargetMaxBlockSize: 128 << 20, ObjectStoreFraction: 0.25}
)

// DefaultSettings returns the current package-wide defaults.
func DefaultSettings() Settings {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	return settings
}

// SetDefaultSettings replaces the package-wide defaults; zero fields keep their defaults.
func SetDefaultSettings(s Settings) {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	if s.TargetMaxBlockSize <= 0 {
		s.TargetMaxBlockSize = 128 << 20
	}
	if s.ObjectStoreFraction <= 0 || s.ObjectStoreFraction > 1 {
		s.ObjectStoreFraction = 0.25
	}
	settings = s
}
