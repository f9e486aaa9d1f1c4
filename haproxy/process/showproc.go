package process

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// procEntry is one process line of the master CLI's "show proc".
type procEntry struct {
	PID     int
	Type    string // "master", "worker" or a program name
	Reloads int
}

// procList is the parsed output of the master CLI's "show proc":
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	5135            master          3 [failed: 0]   0d00h11m01s     2.6.12
//	# workers
//	17148           worker          0               0d00h00m01s     2.6.12
//	# old workers
//	16420           worker          1               0d00h00m12s     2.6.12
//	# programs
//
// The master's <reloads> counts every reload it performed and "[failed: N]"
// the failed ones since the last successful reload. The workers' <reloads>
// counts the reloads a worker has lived through; a worker that is still the
// current one after a failed reload stays under "# workers".
type procList struct {
	Master        procEntry
	MasterFailed  int
	Current       []procEntry
	Old           []procEntry
	masterPresent bool
}

var failedRe = regexp.MustCompile(`\[failed:\s*(\d+)\]`)

func parseShowProc(out string) (procList, error) {
	var pl procList
	section := "master"
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			h := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(line, "#")))
			switch {
			case strings.HasPrefix(h, "<pid>"):
				section = "master"
			case strings.HasPrefix(h, "old workers"):
				section = "old"
			case strings.HasPrefix(h, "workers"):
				section = "current"
			default: // "programs", "old programs" and anything newer
				section = "other"
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			// Not a process line (e.g. an error text from HAProxy).
			continue
		}
		reloads, _ := strconv.Atoi(f[2])
		e := procEntry{PID: pid, Type: f[1], Reloads: reloads}
		switch section {
		case "master":
			if e.Type != "master" {
				continue
			}
			pl.Master = e
			pl.masterPresent = true
			if m := failedRe.FindStringSubmatch(line); m != nil {
				pl.MasterFailed, _ = strconv.Atoi(m[1])
			}
		case "current":
			if e.Type == "worker" {
				pl.Current = append(pl.Current, e)
			}
		case "old":
			if e.Type == "worker" {
				pl.Old = append(pl.Old, e)
			}
		}
	}
	if !pl.masterPresent {
		return pl, fmt.Errorf("unexpected \"show proc\" reply (no master line): %q", truncate(out, 512))
	}
	return pl, nil
}

// currentPIDs returns the PIDs of the current workers.
func (pl procList) currentPIDs() []int {
	pids := make([]int, 0, len(pl.Current))
	for _, e := range pl.Current {
		pids = append(pids, e.PID)
	}
	return pids
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
