package controller

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/router/admission"
)

var (
	// "[/path/conf/haproxy.config:57]" in haproxy -c output.
	configLineRE = regexp.MustCompile(`haproxy\.config:(\d+)\]`)
	// Certificate files are named after their route: <ns:name>.pem.
	certFileRE = regexp.MustCompile(`/router/(?:certs|cacerts)/([a-z0-9][-a-z0-9]*):([a-z0-9][-a-z0-9.]*)\.pem`)
	// Route backends: be_http:ns:name and the like.
	backendRE = regexp.MustCompile(`^backend\s+be_(?:http|edge_http|secure|tcp):([^:\s]+):(\S+)`)
)

// Culprits returns the routes HAProxy's check output blames: those whose
// certificate files it names, and those whose backend section holds a line
// it refused. The result is sorted.
func Culprits(checkOutput string, config []byte) []admission.Key {
	found := map[admission.Key]bool{}
	for _, m := range certFileRE.FindAllStringSubmatch(checkOutput, -1) {
		found[admission.Key(m[1]+"/"+m[2])] = true
	}
	if len(config) > 0 {
		lines := bytes.Split(config, []byte("\n"))
		for _, m := range configLineRE.FindAllStringSubmatch(checkOutput, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 || n > len(lines) {
				continue
			}
			if k, ok := sectionRoute(lines, n-1); ok {
				found[k] = true
			}
		}
	}
	out := make([]admission.Key, 0, len(found))
	for k := range found {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// sectionRoute finds the section that line idx belongs to and returns its
// route if it is a route backend.
func sectionRoute(lines [][]byte, idx int) (admission.Key, bool) {
	for i := idx; i >= 0; i-- {
		l := strings.TrimRight(string(lines[i]), "\r")
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '#' {
			continue
		}
		if m := backendRE.FindStringSubmatch(l); m != nil {
			return admission.Key(m[1] + "/" + m[2]), true
		}
		return "", false
	}
	return "", false
}

// firstAlert returns the first [ALERT] line of haproxy's output (or the
// first line), for a route status message.
func firstAlert(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "[ALERT]") {
			return strings.TrimSpace(l)
		}
	}
	if i := strings.IndexByte(out, '\n'); i > 0 {
		return out[:i]
	}
	return out
}
