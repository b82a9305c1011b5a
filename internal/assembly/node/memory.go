package node

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// defaultStoreShare is the share of the machine's memory a node's object store may use
// by default (Ray uses 30% as well).
const defaultStoreShare = 0.3

// fallbackStoreBytes is the budget when the machine's memory cannot be read.
const fallbackStoreBytes = 2 << 30

// machineMemory returns the machine's total memory in bytes, or 0 if unknown.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// DefaultObjectStoreBytes is the object store budget of a node that is not given one.
func DefaultObjectStoreBytes() int64 {
	if m := machineMemory(); m > 0 {
		return int64(float64(m) * defaultStoreShare)
	}
	return fallbackStoreBytes
}
