package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// PIDFunc returns the PID of HAProxy's (current worker) process, for the
// haproxy_process_* metrics (prometheus.ProcessCollectorOpts.PidFn).
type PIDFunc func() (int, error)

// PIDFile reads the first PID in a pid file (HAProxy writes one per line).
func PIDFile(path string) PIDFunc {
	return func() (int, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("haproxy pid file: %w", err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("haproxy pid file %s is empty", path)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			return 0, fmt.Errorf("haproxy pid file %s: %q is not a PID", path, f[0])
		}
		return pid, nil
	}
}

// FirstPID adapts a function that lists PIDs, current worker first (such
// as process.Manager.WorkerPIDs), bounding each call by timeout.
func FirstPID(list func(ctx context.Context) ([]int, error), timeout time.Duration) PIDFunc {
	return func() (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		pids, err := list(ctx)
		if err != nil {
			return 0, err
		}
		if len(pids) == 0 {
			return 0, errors.New("haproxy has no worker process")
		}
		return pids[0], nil
	}
}
