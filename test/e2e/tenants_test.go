package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openshift-router-go/router/test/prereq"
	"github.com/openshift-router-go/router/test/testcerts"
)

// underTerminal runs the router under a pseudo-terminal (util-linux
// script): it has a controlling terminal, as with "make run", "docker run
// -t" or a pod with tty: true. Nothing the router starts may wait on it.
func underTerminal(t *testing.T) func(argv []string) []string {
	script := prereq.NeedBinary(t, "script")
	return func(argv []string) []string {
		quoted := make([]string, len(argv))
		for i, a := range argv {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return []string{script, "-qfec", "exec " + strings.Join(quoted, " "), "/dev/null"}
	}
}

// tenantName returns a valid DNS subdomain of n characters (labels of at
// most 63) starting with prefix.
func tenantName(prefix string, n int) string {
	b := []byte(prefix + strings.Repeat("x", n-len(prefix)))
	for i := 63; i < n; i += 64 {
		b[i] = '.'
	}
	b[n-1] = 'z'
	return string(b)
}

// steadyTraffic sends a request to get every 50 ms until stopped and
// counts the answers that did not come from want.
type steadyTraffic struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	sent     atomic.Int64
	failures atomic.Int64
	mu       sync.Mutex
	first    string
}

func startSteadyTraffic(get func() (response, error), want string) *steadyTraffic {
	s := &steadyTraffic{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for i := 0; i < 6000; i++ { // at most 5 minutes
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := get()
			s.sent.Add(1)
			if err != nil || resp.Status != 200 || resp.backend() != want {
				s.failures.Add(1)
				s.mu.Lock()
				if s.first == "" {
					s.first = fmt.Sprintf("status %d from %q (%v)", resp.Status, resp.backend(), err)
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *steadyTraffic) Stop(t *testing.T, what string) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	if n := s.failures.Load(); n > 0 || s.sent.Load() == 0 {
		t.Errorf("%s: %d of %d requests failed (first: %s)", what, n, s.sent.Load(), s.first)
	}
}

// TestTenantInputsLeaveOtherTenantsServed is issue 13's verification, in
// manifests mode with the real binary and HAProxy, the router under a
// pseudo-terminal: each of three inputs that used to stop every route
// update (and, after a restart, every route) is added while another
// tenant's route serves. The existing route is served throughout, a route
// created afterwards in another namespace is served within a few seconds,
// and after a restart both are served as soon as /healthz/ready is green.
func TestTenantInputsLeaveOtherTenantsServed(t *testing.T) {
	prereq.NeedBinary(t, "script")
	ca, err := testcerts.NewCA("tenant CA", time.Hour)
	must(t, err)
	longNS, longName := tenantName("long-", 63), tenantName("route-", 253)
	inputs := []struct {
		name string
		// files are the input's manifests; log is a line the router
		// writes about it.
		files func(t *testing.T, be *backend) map[string]string
		log   []string
		env   map[string]string
	}{
		{
			name: "the longest namespace and route name with a long IP allowlist",
			files: func(t *testing.T, be *backend) map[string]string {
				ns, name := longNS, longName
				var list []string
				for i := 0; i < 200; i++ {
					list = append(list, fmt.Sprintf("10.9.%d.%d", i/200, i%200))
				}
				return map[string]string{"long.yaml": serviceYAML(ns, "web", be) + "---\n" +
					annotatedRouteYAML(ns, name, "long.tenant.test", "", "web", "", map[string]string{"haproxy.router.openshift.io/ip_allowlist": strings.Join(list, " ")})}
			},
			log: []string{`"route admitted"`, `route="` + longNS + "/" + longName + `"`},
		},
		{
			name: "85 routes asking for 256 spare slots and a service with 19000 endpoints",
			files: func(t *testing.T, be *backend) map[string]string {
				var b strings.Builder
				b.WriteString(serviceYAML("greedy", "web", be))
				for i := 0; i < 85; i++ {
					b.WriteString("---\n" + annotatedRouteYAML("greedy", fmt.Sprintf("r%d", i), fmt.Sprintf("r%d.greedy.test", i), "", "web", "", map[string]string{"router.openshift.io/pool-size": "256"}))
				}
				var big strings.Builder
				big.WriteString("apiVersion: v1\nkind: Service\nmetadata:\n  name: big\n  namespace: huge\nspec:\n  ports:\n  - name: web\n    port: 80\n")
				for s := 0; s < 19; s++ {
					fmt.Fprintf(&big, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: big-%d\n  namespace: huge\n  labels:\n    kubernetes.io/service-name: big\naddressType: IPv4\nports:\n- name: web\n  port: %d\nendpoints:\n", s, be.Port)
					for i := 0; i < 1000; i++ {
						n := s*1000 + i
						fmt.Fprintf(&big, "- addresses: [\"127.%d.%d.%d\"]\n", 10+n/65536, n/256%256, n%256)
					}
				}
				big.WriteString("---\n" + routeYAML("huge", "many", "many.huge.test", "", "big", ""))
				return map[string]string{"greedy.yaml": b.String(), "huge.yaml": big.String()}
			},
			// The service is served by 1,000 of its endpoints (router/servers).
			log: []string{`"service has more endpoints than the router renders; a stable subset receives traffic"`, `service="huge/big"`, `leftOut=18000`},
		},
		{
			name:  "a certificate whose PEM block carries Proc-Type: 4,ENCRYPTED",
			files: lockedCertificate(ca),
			// OpenShift's extended validation finds no certificate in it.
			log: []string{`route="locked/edge"`, `reason="ExtendedValidationFailed"`, "does not contain any valid"},
		},
		{
			name:  "a certificate whose PEM block carries Proc-Type: 4,ENCRYPTED, without extended validation",
			env:   map[string]string{"EXTENDED_VALIDATION": "false"},
			files: lockedCertificate(ca),
			log:   []string{`route="locked/edge"`, `reason="CertificateNotLoadable"`, "has headers (DEK-Info, Proc-Type)"},
		},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			steadyBE, lateBE, inputBE := startBackend(t, "steady"), startBackend(t, "late"), startBackend(t, "input")
			m := newManifests(t)
			m.Write("steady.yaml", serviceYAML("steady", "web", steadyBE)+"---\n"+routeYAML("steady", "web", "steady.tenant.test", "", "web", ""))
			env, ms := metricsEnv(t)
			for k, v := range in.env {
				env[k] = v
			}
			r := startRouterWrapped(t, underTerminal(t), m.Dir, env, "--manifests", m.Dir)
			steady := func(r *router) func() (response, error) {
				return func() (response, error) { return r.httpGet("steady.tenant.test", "/") }
			}
			late := func(r *router) func() (response, error) {
				return func() (response, error) { return r.httpGet("late.tenant.test", "/") }
			}
			expectBackend(t, loadTimeout, steady(r), "steady")
			waitReady(t, ms)

			traffic := startSteadyTraffic(steady(r), "steady")
			for name, content := range in.files(t, inputBE) {
				m.Write(name, content)
			}
			expectLogLine(t, r, in.log...)
			m.Write("late.yaml", serviceYAML("late", "web", lateBE)+"---\n"+routeYAML("late", "web", "late.tenant.test", "", "web", ""))
			began := time.Now()
			expectBackend(t, 5*time.Second, late(r), "late")
			t.Logf("a route of another namespace was served %v after it was written", time.Since(began).Round(time.Millisecond))
			time.Sleep(time.Second)
			traffic.Stop(t, "the existing route while the input was added")

			r.Stop()
			env, ms = metricsEnv(t)
			for k, v := range in.env {
				env[k] = v
			}
			r = startRouterWrapped(t, underTerminal(t), m.Dir, env, "--manifests", m.Dir)
			eventually(t, 2*loadTimeout, "router ready after the restart", func() error {
				if st, _, err := ms.status("/healthz/ready", false); err != nil || st != 200 {
					return fmt.Errorf("ready: %d %v", st, err)
				}
				return nil
			})
			for host, get := range map[string]func() (response, error){"steady": steady(r), "late": late(r)} {
				if resp, err := get(); err != nil || resp.Status != 200 || resp.backend() != host {
					t.Errorf("ready, but %s.tenant.test answers %d from %q (%v)", host, resp.Status, resp.backend(), err)
				}
			}
			pids := r.haproxyPIDs()
			if len(pids) == 0 {
				t.Fatal("no haproxy process found")
			}
			out, err := exec.Command("ps", "-o", "tty=", "-p", pidList(pids)).Output()
			must(t, err)
			for _, tty := range strings.Fields(string(out)) {
				if tty != "?" {
					t.Errorf("an haproxy process has a controlling terminal: %s", tty)
				}
			}
		})
	}
}

func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}

// lockedCertificate is an edge route whose certificate is valid but whose
// PEM block carries legacy encryption headers (Go's decoder ignores them;
// OpenSSL asks for a passphrase).
func lockedCertificate(ca *testcerts.Pair) func(t *testing.T, be *backend) map[string]string {
	return func(t *testing.T, be *backend) map[string]string {
		pair, err := ca.Issue("locked.tenant.test", []string{"locked.tenant.test"}, time.Hour)
		must(t, err)
		i := strings.Index(pair.CertPEM, "-----\n")
		cert := pair.CertPEM[:i+6] + "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n" + pair.CertPEM[i+6:]
		return map[string]string{"locked.yaml": serviceYAML("locked", "web", be) + "---\n" +
			routeYAML("locked", "edge", "locked.tenant.test", "", "web", tlsYAML("edge", "", map[string]string{"certificate": cert, "key": pair.KeyPEM}))}
	}
}
