package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/openshift-router-go/router/router/admission"
)

// fakeProcess pretends to run HAProxy: it accepts every configuration and
// counts starts and reloads; startErr and reloadErr make them fail. It
// reports exits (exitWatcher) when the test calls exit.
type fakeProcess struct {
	mu        sync.Mutex
	running   bool
	starts    int
	reloads   int
	checks    int
	startErr  error
	reloadErr error
	exited    chan error
}

func newFakeProcess() *fakeProcess { return &fakeProcess{exited: make(chan error, 1)} }

func (p *fakeProcess) Check(context.Context, string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks++
	return nil
}

func (p *fakeProcess) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	if p.startErr != nil {
		return p.startErr
	}
	p.running = true
	p.exited = make(chan error, 1)
	return nil
}

func (p *fakeProcess) Reload(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reloads++
	return p.reloadErr
}

func (p *fakeProcess) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

func (p *fakeProcess) Exited() <-chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// exit makes HAProxy exit unexpectedly.
func (p *fakeProcess) exit(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = false
	p.exited <- err
}

func (p *fakeProcess) counts() (starts, reloads int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, p.reloads
}

func (p *fakeProcess) setReloadErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reloadErr = err
}

// fakeRuntime is HAProxy's runtime API: it records the commands and
// answers them as HAProxy 2.6 does when they succeed. Commands containing
// refuse are answered with an error message; with unreachable set, no
// command can be sent.
type fakeRuntime struct {
	mu          sync.Mutex
	cmds        []string
	refuse      string
	unreachable bool
}

func (r *fakeRuntime) Exec(_ context.Context, cmd string) (string, error) {
	return r.answer(cmd)
}

func (r *fakeRuntime) ExecPayload(_ context.Context, cmd, _ string) (string, error) {
	return r.answer(cmd)
}

func (r *fakeRuntime) answer(cmd string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unreachable {
		return "", errors.New("dial unix run/haproxy.sock: connect: connection refused")
	}
	r.cmds = append(r.cmds, cmd)
	if r.refuse != "" && strings.Contains(cmd, r.refuse) {
		return "Invalid addr.\n", nil
	}
	switch {
	case strings.Contains(cmd, " addr "):
		return "IP changed from '10.0.0.1' to '10.0.0.2', no need to change the port by 'stats socket command'\n", nil
	case strings.HasPrefix(cmd, "add server"):
		return "New server registered.\n", nil
	case strings.HasPrefix(cmd, "set ssl cert"):
		return "Transaction created for certificate x!\n", nil
	case strings.HasPrefix(cmd, "commit ssl cert"):
		return "Committing x\nSuccess!\n", nil
	case strings.HasPrefix(cmd, "new ssl cert"):
		return "New empty certificate store 'x'!\n", nil
	case strings.HasPrefix(cmd, "add ssl crt-list"):
		return "Inserting certificate 'x' in crt-list 'y'.\nSuccess!\n", nil
	case strings.HasPrefix(cmd, "del ssl crt-list"):
		return "Entry 'x' deleted in crtlist 'y'!\n", nil
	case strings.HasPrefix(cmd, "del ssl cert"):
		return "Certificate 'x' deleted!\n", nil
	}
	return "", nil
}

func (r *fakeRuntime) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cmds...)
}

func (r *fakeRuntime) set(refuse string, unreachable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refuse, r.unreachable = refuse, unreachable
}

// fakeObserver records the controller's measurements.
type fakeObserver struct {
	mu             sync.Mutex
	writes         int
	reloads        int
	reasons        []string
	runtimeChanges map[string]int
	runtimeErrors  int
	restarts       int
	failing        bool
	admission      map[admission.Key]admission.Result
	unchecked      int
}

func (o *fakeObserver) ObserveUncheckedEndpoints(n int)      { o.mu.Lock(); o.unchecked = n; o.mu.Unlock() }
func (o *fakeObserver) ObserveServicesOverEndpointLimit(int) {}

func (o *fakeObserver) uncheckedEndpoints() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unchecked
}

func (o *fakeObserver) ObserveWriteConfig(time.Duration) { o.mu.Lock(); o.writes++; o.mu.Unlock() }
func (o *fakeObserver) ObserveReload(time.Duration, error) {
	o.mu.Lock()
	o.reloads++
	o.mu.Unlock()
}
func (o *fakeObserver) ObserveAdmission(r map[admission.Key]admission.Result) {
	o.mu.Lock()
	o.admission = r
	o.mu.Unlock()
}
func (o *fakeObserver) ObserveReloadReason(reason string) {
	o.mu.Lock()
	o.reasons = append(o.reasons, reason)
	o.mu.Unlock()
}
func (o *fakeObserver) ObserveRuntimeChange(kind string) {
	o.mu.Lock()
	if o.runtimeChanges == nil {
		o.runtimeChanges = map[string]int{}
	}
	o.runtimeChanges[kind]++
	o.mu.Unlock()
}
func (o *fakeObserver) ObserveRuntimeError() { o.mu.Lock(); o.runtimeErrors++; o.mu.Unlock() }
func (o *fakeObserver) ObserveRestart()      { o.mu.Lock(); o.restarts++; o.mu.Unlock() }
func (o *fakeObserver) ObserveApplyFailing(failing bool) {
	o.mu.Lock()
	o.failing = failing
	o.mu.Unlock()
}

func (o *fakeObserver) lastReason() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.reasons) == 0 {
		return ""
	}
	return o.reasons[len(o.reasons)-1]
}

func (o *fakeObserver) runtime(kind string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runtimeChanges[kind]
}
