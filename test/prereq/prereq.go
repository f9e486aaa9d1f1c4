// Package prereq is the one place where tests find the components they need
// (haproxy, wrk, etcd, the cached kube-apiserver, root and ip for network
// namespaces) and say what to do when one is missing.
//
// A missing component fails the test with the component's name and the
// command that installs it (`make test` installs everything). It skips the
// test only on the quick path the user asks for explicitly: `make unit`, or
// ROUTER_TEST_QUICK=1 in the environment.
package prereq

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// QuickEnv is the variable that lets tests skip when a component is missing.
const QuickEnv = "ROUTER_TEST_QUICK"

// install is how to get each component, for the messages.
var install = map[string]string{
	"haproxy":                 "apt-get install haproxy",
	"wrk":                     "apt-get install wrk",
	"etcd":                    "apt-get install etcd-server",
	"ip":                      "apt-get install iproute2",
	"openssl":                 "apt-get install openssl",
	"dot":                     "apt-get install graphviz",
	"kube-apiserver":          "hack/kube-apiserver.sh (builds and caches it, about 5 minutes the first time)",
	"kube-controller-manager": "hack/kube-controller-manager.sh (builds and caches it, a few minutes the first time)",
	"root":                    "run the tests as root (sudo make test)",
}

// Missing is a component a test needs and this machine lacks.
type Missing struct {
	Component string // haproxy, wrk, etcd, ip, kube-apiserver, kube-controller-manager, root
	Detail    string // what was looked for, e.g. the path tried
}

func (m *Missing) Error() string {
	msg := m.Component + " is missing"
	if m.Detail != "" {
		msg += " (" + m.Detail + ")"
	}
	how := install[m.Component]
	if how == "" {
		how = "install it"
	}
	return fmt.Sprintf("%s: `make test` installs it, or %s; to skip the tests that need it, run `make unit` or set %s=1",
		msg, how, QuickEnv)
}

// Quick reports whether the user asked for the quick path.
func Quick() bool {
	v := os.Getenv(QuickEnv)
	return v != "" && v != "0" && v != "false"
}

// TB is the part of testing.TB that Require uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// Require fails t when err is not nil: with the install hint when err is a
// *Missing (skipped instead on the quick path), as it is otherwise.
func Require(t TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var m *Missing
	if errors.As(err, &m) && Quick() {
		t.Skip(err.Error() + " (skipped: " + QuickEnv + " is set)")
		return
	}
	t.Fatal(err)
}

// Binary looks name up in PATH; a *Missing error when it is not there.
func Binary(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", &Missing{Component: name, Detail: "not in PATH"}
	}
	return p, nil
}

// NeedBinary returns name's path, or fails (skips on the quick path) t.
func NeedBinary(t TB, name string) string {
	t.Helper()
	p, err := Binary(name)
	Require(t, err)
	return p
}

// Root returns a *Missing error unless the tests run as root.
func Root(why string) error {
	if os.Geteuid() != 0 {
		return &Missing{Component: "root", Detail: why}
	}
	return nil
}

// MainExit is for TestMain functions that cannot run at all without err's
// component: it prints the message and returns the exit code (0, skipped, on
// the quick path; 1 otherwise).
func MainExit(err error) int {
	var m *Missing
	if errors.As(err, &m) && Quick() {
		fmt.Fprintln(os.Stderr, "skipping every test of this package:", err, "(skipped: "+QuickEnv+" is set)")
		return 0
	}
	fmt.Fprintln(os.Stderr, "FAIL:", err)
	return 1
}
