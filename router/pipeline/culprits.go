package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/openshift-router-go/router/haproxy/dynamic"
	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
)

// One principle, in one place: a failure that can be traced to a route —
// a file of the route that cannot be written, a line of its backend or a
// file of it that HAProxy refuses — rejects that route (ConfigCheckFailed,
// with a message about that route only) and everything else is applied.
// Culprits finds the routes; the controller (router/controller) rejects
// them until they change or go away (Exclusion).

var (
	// "[/path/conf/haproxy.config:57]" in haproxy -c output.
	configLineRE = regexp.MustCompile(`haproxy\.config:(\d+)\]`)
	// Route backends: be_http:ns:name and the like.
	backendRE = regexp.MustCompile(`^backend\s+be_(?:http|edge_http|secure|tcp):([^:\s]+):(\S+)`)
)

// Culprit is a route a failure is traced to.
type Culprit struct {
	Route admission.Key
	// Message is for the route's status: what failed for this route,
	// naming nothing of another route.
	Message string
}

// Culprits returns the routes err can be traced to, sorted: the routes of
// the files a files.StageError holds, else the routes HAProxy's check
// output (err's text) blames — those whose files it names and those whose
// backend section holds a line it refused. config is the configuration
// checked, fs the files written with it.
func Culprits(err error, fs []files.File, config []byte) []Culprit {
	found := map[admission.Key]string{}
	var se *files.StageError
	if errors.As(err, &se) {
		for _, f := range se.Files {
			k := RouteKey(f.Route)
			if _, ok := found[k]; !ok {
				found[k] = "the router could not write a file for this route: " + f.Err.Error()
			}
		}
	} else if err != nil {
		for k, line := range blamed(err.Error(), fs, config) {
			found[k] = "haproxy refused the configuration generated for this route: " + line
		}
	}
	out := make([]Culprit, 0, len(found))
	for k, msg := range found {
		out = append(out, Culprit{Route: k, Message: msg})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route < out[j].Route })
	return out
}

// CheckCulprits returns the routes HAProxy's check output blames, sorted
// (see Culprits).
func CheckCulprits(checkOutput string, config []byte, fs []files.File) []admission.Key {
	found := blamed(checkOutput, fs, config)
	out := make([]admission.Key, 0, len(found))
	for k := range found {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// blamed returns the routes HAProxy's output blames, each with the first
// output line that blames it.
func blamed(output string, fs []files.File, config []byte) map[admission.Key]string {
	routeFiles := make(map[string]model.ServiceAliasConfigKey)
	for _, f := range fs {
		if f.Route != "" {
			routeFiles[f.Path] = f.Route
		}
	}
	var lines [][]byte
	if len(config) > 0 {
		lines = bytes.Split(config, []byte("\n"))
	}
	found := map[admission.Key]string{}
	blame := func(k admission.Key, line string) {
		if _, ok := found[k]; !ok {
			found[k] = strings.TrimSpace(line)
		}
	}
	for _, line := range strings.Split(output, "\n") {
		for _, tok := range strings.FieldsFunc(line, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\'' || r == '"' || r == '`' || r == '[' || r == ']' || r == ','
		}) {
			for _, p := range []string{tok, strings.TrimRight(tok, ":.")} {
				if k, ok := routeFiles[p]; ok {
					blame(RouteKey(k), line)
				}
			}
		}
		for _, m := range configLineRE.FindAllStringSubmatch(line, -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 || n > len(lines) {
				continue
			}
			if k, ok := sectionRoute(lines, n-1); ok {
				blame(k, line)
			}
		}
	}
	return found
}

// RouteKey returns the admission key of a model key ("ns:name" →
// "ns/name").
func RouteKey(k model.ServiceAliasConfigKey) admission.Key {
	return admission.Key(strings.Replace(string(k), ":", "/", 1))
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

// runtimeTargetRE is the "<backend>/<server>" a runtime API command
// names, for route backends.
var runtimeTargetRE = regexp.MustCompile(`^be_(?:http|edge_http|secure|tcp):([^:\s/]+):([^/\s]+)/\S+$`)

// untraceableReplies are HAProxy's answers that blame the router, not the
// route a command names: a command this HAProxy does not know or allow,
// or a backend or server it does not have (what runs differs from what the
// router thinks; a reload fixes it).
var untraceableReplies = []string{"unknown command", "permission denied", "no such backend", "no such server"}

// RuntimeCulprit returns the route a runtime API command HAProxy refused
// is about: the route of the backend whose server it sets, adds or
// enables, or the route of the certificate file it replaces (a file of
// fs). A refusal that names no route, one whose answer blames the router
// (untraceableReplies) and a command that could not be sent at all have
// no culprit.
func RuntimeCulprit(err error, fs []files.File) (Culprit, bool) {
	var re *dynamic.RefusedError
	if !errors.As(err, &re) {
		return Culprit{}, false
	}
	reply := strings.ToLower(re.Reply)
	for _, u := range untraceableReplies {
		if strings.Contains(reply, u) {
			return Culprit{}, false
		}
	}
	msg := fmt.Sprintf("haproxy's runtime API refused a change for this route (%q): %s", re.Command.Text, re.Reply)
	for _, tok := range strings.Fields(re.Command.Text) {
		if m := runtimeTargetRE.FindStringSubmatch(tok); m != nil {
			return Culprit{Route: admission.Key(m[1] + "/" + m[2]), Message: msg}, true
		}
	}
	for _, tok := range strings.Fields(re.Command.Text) {
		for _, f := range fs {
			if f.Route != "" && filepath.Clean(f.Path) == filepath.Clean(tok) {
				return Culprit{Route: RouteKey(f.Route), Message: msg}, true
			}
		}
	}
	return Culprit{}, false
}
