package kubetest

import (
	"sync"
	"testing"

	"github.com/openshift-router-go/router/test/prereq"
)

var shared struct {
	mu      sync.Mutex
	inMain  bool
	started bool
	c       *Cluster
	err     error
}

// Main runs the package's tests and then stops the Shared cluster, if one was
// started. Packages that use Shared call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c != nil {
		shared.c.shutdown()
		shared.c = nil
	}
	return code
}

// Shared returns one cluster for all the tests of the package (started by
// the first caller, stopped when Main returns), which saves the few seconds
// of a start per test. Tests sharing it should keep to their own namespaces
// (CreateNamespace with a "prefix-") and must not stop its API server: a test
// that does needs its own cluster from Start.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("kubetest.Shared needs the package's TestMain to call kubetest.Main")
	}
	if !shared.started {
		shared.started = true
		shared.c, shared.err = start(&options{})
	}
	if shared.err != nil {
		prereq.Require(t, shared.err)
	}
	return shared.c
}
