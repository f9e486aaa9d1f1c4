package kubetest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
)

// The test subnets. A NetNS holds one of them for its whole life, under a
// machine-wide file lock, so NetNS values never share a subnet, whether in one
// test process or in the parallel test processes of `go test ./...`: the first
// NetNS gets 198.51.100.0/24, a second one at the same time 203.0.113.0/24,
// and a third waits (up to 5 minutes) for one of them to be released. Never
// any other range: the machine's own network must not be touched.
var netSlots = []string{"198.51.100", "203.0.113"}

const (
	firstNSHost = 10  // the namespace's first address is .10
	lastNSHost  = 250 // AddAddress goes up to .250
	slotWait    = 5 * time.Minute
)

// NetNS is a network namespace with test hosts: a veth pair whose host side
// has X.1/24 and whose namespace side has X.10/24 and, with AddAddress, .11,
// .12, … .250, where X is 198.51.100 (or 203.0.113 when another NetNS holds
// that one; use IP, IPs and HostIP rather than literal addresses). The
// namespace has no default route: its hosts reach only the host side.
type NetNS struct {
	Name   string // ip netns name, ortest-sN-XXXXXX
	HostIf string // host side of the veth pair
	NSIf   string // namespace side of the veth pair
	HostIP string // host side address, X.1
	Subnet string // X.0/24

	prefix string
	lock   *os.File
	dir    string

	mu       sync.Mutex
	ips      []string
	backends []*Backend
	bin      string
}

// NewNetNS creates a network namespace with one test host (IP()), and
// removes it in t.Cleanup (backends ended by PID, links and namespace
// deleted). It needs root: without it the test fails (skips on the quick
// path, see package prereq).
func NewNetNS(t testing.TB) *NetNS {
	t.Helper()
	n := newNetNS(t, slotWait)
	if n == nil {
		t.Fatalf("no free test subnet after %v: other tests hold network namespaces with %v", slotWait, netSlots)
	}
	return n
}

// newNetNS is NewNetNS waiting at most wait for a free subnet; nil if there
// was none.
func newNetNS(t testing.TB, wait time.Duration) *NetNS {
	t.Helper()
	prereq.NeedBinary(t, "ip")
	prereq.Require(t, prereq.Root("network namespaces need root: ip netns add"))
	slot, lock, err := acquireSlot(wait)
	if err != nil {
		t.Fatal(err)
	}
	if lock == nil {
		return nil
	}
	n := &NetNS{prefix: netSlots[slot], lock: lock}
	n.Subnet = n.prefix + ".0/24"
	n.HostIP = n.prefix + ".1"
	t.Cleanup(n.close)
	removeStale(t, slot)

	// Refuse to run when anything else already has an address in the subnet.
	if out, err := exec.Command("ip", "-o", "-4", "addr", "show", "to", n.Subnet).CombinedOutput(); err != nil {
		t.Fatalf("ip addr show to %s: %v %s", n.Subnet, err, out)
	} else if s := strings.TrimSpace(string(out)); s != "" {
		t.Fatalf("refusing to create test hosts: %s is already in use on this machine:\n%s", n.Subnet, s)
	}

	rnd := make([]byte, 3)
	if _, err := rand.Read(rnd); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(rnd)
	n.Name = fmt.Sprintf("ortest-s%d-%s", slot, id)
	n.HostIf = fmt.Sprintf("ort%d-%s", slot, id)
	n.NSIf = n.HostIf + "-n"
	if n.dir, err = os.MkdirTemp("", tempPrefix("n")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("ip netns add %s: %v %s", n.Name, err, bytes.TrimSpace(out))
		n.Name = ""
		if bytes.Contains(out, []byte("not permitted")) || bytes.Contains(out, []byte("denied")) {
			prereq.Require(t, &prereq.Missing{Component: "root", Detail: "network namespaces are not permitted here: " + msg})
		}
		t.Fatal(msg)
	}
	first := fmt.Sprintf("%s.%d", n.prefix, firstNSHost)
	steps := [][]string{
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", n.NSIf},
		{"link", "set", n.NSIf, "netns", n.Name},
		{"addr", "add", n.HostIP + "/24", "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
		{"-n", n.Name, "addr", "add", first + "/24", "dev", n.NSIf},
		{"-n", n.Name, "link", "set", n.NSIf, "up"},
	}
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	if err := n.checkRoute(first); err != nil {
		t.Fatal(err)
	}
	n.ips = []string{first}
	return n
}

// acquireSlot takes the lock of a free test subnet, waiting up to wait when
// both are held (then the lock is nil).
func acquireSlot(wait time.Duration) (int, *os.File, error) {
	lockDir := os.TempDir()
	if st, err := os.Stat("/run/lock"); err == nil && st.IsDir() {
		lockDir = "/run/lock"
	}
	deadline := time.Now().Add(wait)
	for {
		for slot := range netSlots {
			path := filepath.Join(lockDir, fmt.Sprintf("openshift-router-test-netns-%d.lock", slot))
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				return 0, nil, err
			}
			// flock locks belong to the open file: a second open in this
			// process conflicts like one in another process.
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
				return slot, f, nil
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			return 0, nil, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// removeStale deletes namespaces and links of this slot left by a test
// process that died: with the slot's lock held, none can be in use.
func removeStale(t testing.TB, slot int) {
	nsPrefix := fmt.Sprintf("ortest-s%d-", slot)
	ifPrefix := fmt.Sprintf("ort%d-", slot)
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, ifPrefix) {
				t.Logf("removing stale test link %s", name)
				_ = exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && strings.HasPrefix(f[0], nsPrefix) {
				t.Logf("removing stale test network namespace %s", f[0])
				_ = exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	}
}

// checkRoute makes sure the host reaches ip through this namespace's veth.
func (n *NetNS) checkRoute(ip string) error {
	out, err := exec.Command("ip", "route", "get", ip).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip route get %s: %v %s", ip, err, out)
	}
	f := strings.Fields(string(out))
	dev := ""
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			dev = f[i+1]
			break
		}
	}
	if dev != n.HostIf {
		return fmt.Errorf("refusing to use %s: the host routes it via %q, not the test veth %s: %s",
			ip, dev, n.HostIf, strings.TrimSpace(string(out)))
	}
	return nil
}

// IP returns the namespace's first address (X.10).
func (n *NetNS) IP() string { return n.ips[0] }

// IPs returns all the namespace's addresses, in the order they were added.
func (n *NetNS) IPs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.ips...)
}

// AddAddress adds the next address (X.11, X.12, … X.250) to the namespace
// and returns it.
func (n *NetNS) AddAddress(t testing.TB) string {
	t.Helper()
	ip, err := n.addAddress()
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

func (n *NetNS) addAddress() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	host := firstNSHost + len(n.ips)
	if host > lastNSHost {
		return "", fmt.Errorf("no more test addresses in %s (.%d-.%d used)", n.Subnet, firstNSHost, lastNSHost)
	}
	ip := fmt.Sprintf("%s.%d", n.prefix, host)
	if out, err := exec.Command("ip", "-n", n.Name, "addr", "add", ip+"/24", "dev", n.NSIf).CombinedOutput(); err != nil {
		return "", fmt.Errorf("adding %s: %v %s", ip, err, out)
	}
	if err := n.checkRoute(ip); err != nil {
		return "", err
	}
	n.ips = append(n.ips, ip)
	return ip, nil
}

func (n *NetNS) hasIP(ip string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.ips {
		if x == ip {
			return true
		}
	}
	return false
}

// Command returns a command that runs name inside the namespace
// (ip netns exec). The caller starts it and ends it (by its PID); it gets
// SIGKILL when the OS thread that starts it ends, which is normally when the
// test process dies.
func (n *NetNS) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// backendBinary builds cmd/netns-backend once per NetNS (quick with the Go
// build cache).
func (n *NetNS) backendBinary(t testing.TB) string {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.bin != "" {
		return n.bin
	}
	n.bin = buildCommand(t, n.dir, "netns-backend")
	return n.bin
}

// buildCommand builds test/kubetest/cmd/name into dir and returns the
// binary's path (quick with the Go build cache).
func buildCommand(t testing.TB, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, "github.com/openshift-router-go/router/test/kubetest/cmd/"+name)
	if _, file, _, ok := runtime.Caller(0); ok {
		src := filepath.Join(filepath.Dir(file), "cmd", name)
		if _, err := os.Stat(src); err == nil {
			cmd = exec.Command("go", "build", "-o", bin, ".")
			cmd.Dir = src
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// Backend is an HTTP(S) server on a test host in the namespace that answers
// every request with "backend=NAME host=HOST path=PATH x-forwarded-proto=P
// tls=BOOL".
type Backend struct {
	Name string
	IP   string
	Port int
	Addr string // IP:PORT
	URL  string // http://IP:PORT or https://IP:PORT

	cmd      *exec.Cmd
	done     chan struct{}
	stderr   *lockedBuffer
	stopOnce sync.Once
}

// StartBackend runs a plain HTTP backend named name on ip:port inside the
// namespace (port 0 picks a free one). ip must be one of the namespace's
// addresses. It is ready when this returns, and ended in t.Cleanup.
func (n *NetNS) StartBackend(t testing.TB, ip string, port int, name string) *Backend {
	t.Helper()
	return n.startBackend(t, ip, port, name, nil)
}

// StartTLSBackend is StartBackend serving TLS with the given certificate and
// key (PEM), for passthrough and re-encrypt routes.
func (n *NetNS) StartTLSBackend(t testing.TB, ip string, port int, name, certPEM, keyPEM string) *Backend {
	t.Helper()
	return n.startBackend(t, ip, port, name, []string{certPEM, keyPEM})
}

// StartForwarder listens at ip:port in the namespace and passes each TCP
// connection to target (e.g. a port of the host side, HostIP), ended in
// t.Cleanup.
func (n *NetNS) StartForwarder(t testing.TB, ip string, port int, name, target string) *Backend {
	t.Helper()
	return n.startBackend(t, ip, port, name, nil, "-forward", target)
}

func (n *NetNS) startBackend(t testing.TB, ip string, port int, name string, tlsPair []string, extra ...string) *Backend {
	t.Helper()
	if !n.hasIP(ip) {
		t.Fatalf("StartBackend: %s is not an address of network namespace %s (%v)", ip, n.Name, n.IPs())
	}
	bin := n.backendBinary(t)
	args := append([]string{"-listen", net.JoinHostPort(ip, strconv.Itoa(port)), "-name", name}, extra...)
	scheme := "http"
	if tlsPair != nil {
		base := filepath.Join(n.dir, fmt.Sprintf("tls-%d", tlsFiles.Add(1)))
		if err := os.WriteFile(base+".crt", []byte(tlsPair[0]), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".key", []byte(tlsPair[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-cert", base+".crt", "-key", base+".key")
		scheme = "https"
	}
	b := &Backend{Name: name, IP: ip, done: make(chan struct{}), stderr: &lockedBuffer{}}
	b.cmd = n.Command(bin, args...)
	// A pipe of our own: cmd.Wait does not close it, so the first line is
	// read even if the backend exits at once.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b.cmd.Stdout, b.cmd.Stderr = pw, b.stderr
	err = StartCmd(b.cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("starting backend %s: %v", name, err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.done)
	}()
	n.mu.Lock()
	n.backends = append(n.backends, b)
	n.mu.Unlock()
	t.Cleanup(b.Stop)

	lines := make(chan string, 1)
	go func() {
		defer pr.Close()
		r := bufio.NewReader(pr)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r) // until the backend exits
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			b.Stop()
			t.Fatalf("backend %s on %s:%d did not start: %s", name, ip, port, b.stderr.String())
		}
		_, p, _ := net.SplitHostPort(addr)
		b.Port, _ = strconv.Atoi(p)
	case <-time.After(15 * time.Second):
		b.Stop()
		t.Fatalf("backend %s on %s:%d: not listening after 15s: %s", name, ip, port, b.stderr.String())
	}
	b.Addr = net.JoinHostPort(ip, strconv.Itoa(b.Port))
	b.URL = scheme + "://" + b.Addr
	return b
}

// Stop ends the backend (SIGTERM to its PID, SIGKILL after 5 s).
func (b *Backend) Stop() {
	b.stopOnce.Do(func() {
		select {
		case <-b.done:
			return
		default:
		}
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
			return
		case <-time.After(5 * time.Second):
		}
		_ = b.cmd.Process.Kill()
		select {
		case <-b.done:
		case <-time.After(5 * time.Second):
		}
	})
}

// close ends the backends, deletes the links and the namespace and releases
// the subnet.
func (n *NetNS) close() {
	n.mu.Lock()
	backends := n.backends
	n.backends = nil
	n.mu.Unlock()
	for _, b := range backends {
		b.Stop()
	}
	if n.HostIf != "" {
		// Deleting one end of the veth pair deletes both.
		_ = exec.Command("ip", "link", "del", n.HostIf).Run()
	}
	if n.Name != "" {
		_ = exec.Command("ip", "netns", "del", n.Name).Run()
	}
	if n.dir != "" {
		os.RemoveAll(n.dir)
	}
	if n.lock != nil {
		n.lock.Close() // releases the flock
		n.lock = nil
	}
}

var tlsFiles atomic.Int64

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
