// Package workerenv is the contract between a node agent (rayctl start) and the processes
// it starts: the environment variables that put a program into worker mode, or hand a
// submitted driver its job's settings. The agent writes them (Worker.Environ); ray.Init
// reads them (FromEnv). Nothing else should spell these names.
package workerenv

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The variables.
const (
	// Address is the cluster's GCS: etcd client endpoints, host:port, comma-separated
	// (Ray's RAY_ADDRESS). A driver with it set joins that cluster.
	Address = "RAY_ADDRESS"
	// Mode "worker" selects worker mode: ray.Init joins the cluster as a worker process of
	// Job on the agent's machine, hosts the job's tasks and actors, and never returns.
	Mode = "RAY_GO_MODE"
	// Job is the job a worker process serves.
	Job = "RAY_GO_JOB_ID"
	// Agent is the ID of the node agent that started the process.
	Agent = "RAY_GO_AGENT_ID"
	// Resources is the worker's resources as a JSON object, e.g. {"CPU":2,"accel":1}.
	Resources = "RAY_GO_RESOURCES"
	// ObjectStoreBytes is the worker's object store budget in bytes.
	ObjectStoreBytes = "RAY_GO_OBJECT_STORE_BYTES"
	// Dir is the directory the process keeps its files in (spill files); the agent
	// removes it after the process exits.
	Dir = "RAY_GO_NODE_DIR"
	// SpillDir is the directory a process's object store spills to (its node makes a
	// directory of its own there). A worker process gets its agent's, under `rayctl start
	// --spill-dir` (unset: under Dir); a driver or local-mode program reads it when its
	// Init has no ray.WithSpillDir; `rayctl start` takes it for --spill-dir.
	SpillDir = "RAY_GO_SPILL_DIR"
	// Submission is set for a driver started by `rayctl job submit`: its submission ID,
	// recorded in the job it registers.
	Submission = "RAY_GO_SUBMISSION_ID"
	// Namespace is the GCS key namespace of the cluster (default: none). It is not the
	// job's namespace of named actors: that is JobNamespace.
	Namespace = "RAY_GO_GCS_NAMESPACE"
	// JobNamespace is the job's namespace of named actors (Ray's ray.init(namespace=...)):
	// a driver without ray.WithNamespace takes it from here (rayctl job submit --env
	// RAY_GO_JOB_NAMESPACE=NS), else its job gets an anonymous namespace of its own. An
	// agent sets it for a job's worker processes to the one the job's driver recorded.
	JobNamespace = "RAY_GO_JOB_NAMESPACE"
	// Machine is the Unix socket of the agent's machine ledger (package tasks/machine):
	// the worker process's resources are shared there with the machine's other jobs.
	Machine = "RAY_GO_MACHINE"

	// Credentials (see internal/base/identity). GCSCA, GCSCert and GCSKey name the files
	// of a GCS client's credentials: the CA certificate, a client certificate and its key.
	// An agent sets them for the processes it starts (its own credentials, never the CA's
	// key); a user sets them for an external etcd (rayctl's --gcs-ca, --gcs-cert, --gcs-key).
	GCSCA   = "RAY_GO_GCS_CA"
	GCSCert = "RAY_GO_GCS_CERT"
	GCSKey  = "RAY_GO_GCS_KEY"
	// Token is the cluster's join token ("<secret>.<CA hash>"); TokenFile names a file
	// holding it. A driver or rayctl with one gets a certificate from the head.
	Token     = "RAY_GO_TOKEN"
	TokenFile = "RAY_GO_TOKEN_FILE"
	// JoinAddress is the head's join endpoint, host:port (default: the GCS port + 1).
	JoinAddress = "RAY_GO_JOIN_ADDRESS"
	// Insecure "1" (or "true") talks plain text to a cluster started with --insecure.
	Insecure = "RAY_GO_INSECURE"
	// GCHeapFloor is the heap-goal floor of a runtime process in bytes (ray.WithGCHeapFloor;
	// 0 turns it off). It is not part of Contract: an agent's worker processes and the
	// drivers it starts inherit it from the agent's environment (rayctl start), and a
	// driver reads it when its program gives no WithGCHeapFloor.
	GCHeapFloor = "RAY_GO_GC_HEAP_FLOOR"
)

// ParseGCHeapFloor reads GCHeapFloor's value: a number of bytes, 0 or more ("" is 0 with
// set false).
func ParseGCHeapFloor(v string) (floor int64, set bool, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, true, fmt.Errorf("workerenv: %s=%q: want a number of bytes, 0 (off) or more", GCHeapFloor, v)
	}
	return n, true, nil
}

// Contract lists every variable of this contract: an agent removes them from the
// environment it passes on before it sets its own.
var Contract = []string{Address, Mode, Job, Agent, Resources, ObjectStoreBytes, Dir, SpillDir, Submission, Namespace, JobNamespace,
	Machine, GCSCA, GCSCert, GCSKey, Token, TokenFile, JoinAddress, Insecure}

// IsTrue reads a boolean variable's value ("1", "true", "yes", any case).
func IsTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// ModeWorker is the value of Mode that selects worker mode.
const ModeWorker = "worker"

// Worker is what a worker process needs to know.
type Worker struct {
	Address   []string
	Namespace string // the GCS key namespace
	Job       string
	// JobNamespace is the job's namespace of named actors (the driver's; "" for a job
	// recorded without one).
	JobNamespace string
	Agent        string
	Resources    map[string]float64
	// ObjectStoreBytes is the machine's object store budget; with a Machine ledger that
	// shares it, the process's store keeps in memory only what it holds a grant of.
	ObjectStoreBytes int64
	Dir              string
	SpillDir         string // "": under Dir
	// Machine is the machine ledger's socket (empty: the resources are the process's own).
	Machine string
	// The GCS credentials' files (all empty with Insecure).
	GCSCA, GCSCert, GCSKey string
	Insecure               bool
}

// Environ returns the variables for a worker process (to append to os.Environ()).
func (w Worker) Environ() []string {
	res, _ := json.Marshal(w.Resources)
	env := []string{
		Address + "=" + strings.Join(w.Address, ","),
		Mode + "=" + ModeWorker,
		Job + "=" + w.Job,
		Agent + "=" + w.Agent,
		Resources + "=" + string(res),
		ObjectStoreBytes + "=" + strconv.FormatInt(w.ObjectStoreBytes, 10),
		Dir + "=" + w.Dir,
	}
	if w.Namespace != "" {
		env = append(env, Namespace+"="+w.Namespace)
	}
	if w.JobNamespace != "" {
		env = append(env, JobNamespace+"="+w.JobNamespace)
	}
	if w.Machine != "" {
		env = append(env, Machine+"="+w.Machine)
	}
	if w.SpillDir != "" {
		env = append(env, SpillDir+"="+w.SpillDir)
	}
	if w.Insecure {
		env = append(env, Insecure+"=1")
	} else {
		env = append(env, GCSCA+"="+w.GCSCA, GCSCert+"="+w.GCSCert, GCSKey+"="+w.GCSKey)
	}
	return env
}

// FromEnv reads worker mode from an environment (getenv: os.Getenv, which only the root
// package calls): ok is false when Mode is not "worker".
func FromEnv(getenv func(string) string) (w Worker, ok bool, err error) {
	if getenv(Mode) != ModeWorker {
		return Worker{}, false, nil
	}
	w = Worker{
		Address:      SplitAddress(getenv(Address)),
		Namespace:    getenv(Namespace),
		Job:          getenv(Job),
		JobNamespace: getenv(JobNamespace),
		Agent:        getenv(Agent),
		Dir:          getenv(Dir),
		SpillDir:     getenv(SpillDir),
		Machine:      getenv(Machine),
		GCSCA:        getenv(GCSCA),
		GCSCert:      getenv(GCSCert),
		GCSKey:       getenv(GCSKey),
		Insecure:     IsTrue(getenv(Insecure)),
	}
	if len(w.Address) == 0 || w.Job == "" {
		return w, true, fmt.Errorf("workerenv: worker mode needs %s and %s", Address, Job)
	}
	if !w.Insecure && (w.GCSCA == "" || w.GCSCert == "" || w.GCSKey == "") {
		return w, true, fmt.Errorf("workerenv: worker mode needs the GCS credentials %s, %s and %s (or %s=1 in a cluster started with --insecure)",
			GCSCA, GCSCert, GCSKey, Insecure)
	}
	if s := getenv(Resources); s != "" {
		if err := json.Unmarshal([]byte(s), &w.Resources); err != nil {
			return w, true, fmt.Errorf("workerenv: %s=%q: %w", Resources, s, err)
		}
		for name, v := range w.Resources {
			if name == "" || v < 0 {
				return w, true, fmt.Errorf("workerenv: %s=%q: resource %q has the amount %v (want a name and an amount of 0 or more)", Resources, s, name, v)
			}
		}
	}
	if s := getenv(ObjectStoreBytes); s != "" {
		if w.ObjectStoreBytes, err = strconv.ParseInt(s, 10, 64); err != nil || w.ObjectStoreBytes < 0 {
			return w, true, fmt.Errorf("workerenv: %s=%q: want a number of bytes, 0 or more", ObjectStoreBytes, s)
		}
	}
	return w, true, nil
}

// SplitAddress splits a comma-separated endpoint list, dropping empty parts and spaces.
func SplitAddress(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
