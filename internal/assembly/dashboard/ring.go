package dashboard

import "sync"

// Sample is the cluster at one time, as the charts show it.
type Sample struct {
	UnixMs       int64   `json:"t"`
	NodesAlive   float64 `json:"nodes_alive"`
	JobsRunning  float64 `json:"jobs_running"`
	CPUUsed      float64 `json:"cpu_used"`
	CPUTotal     float64 `json:"cpu_total"`
	StoreUsed    float64 `json:"object_store_used"`
	StoreBudget  float64 `json:"object_store_budget"`
	TasksRunning float64 `json:"tasks_running"`
	TasksPending float64 `json:"tasks_pending"`
	TasksDone    float64 `json:"tasks_finished"`
	TasksFailed  float64 `json:"tasks_failed"`
	ActorsAlive  float64 `json:"actors_alive"`
	HeadCPU      float64 `json:"head_cpu_percent"`
	HeadMemUsed  float64 `json:"head_mem_used"`
	HeadMemTotal float64 `json:"head_mem_total"`
}

// ring keeps the newest samples, at most its capacity (a leaf data structure: its mutex
// guards only the slice).
type ring struct {
	mu   sync.Mutex
	buf  []Sample
	next int // where the next sample goes
	full bool
}

func newRing(capacity int) *ring { return &ring{buf: make([]Sample, max(capacity, 1))} }

func (r *ring) add(s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// samples returns a copy, oldest first.
func (r *ring) samples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]Sample{}, r.buf[:r.next]...)
	}
	return append(append([]Sample{}, r.buf[r.next:]...), r.buf[:r.next]...)
}
