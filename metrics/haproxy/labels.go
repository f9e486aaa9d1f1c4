package haproxy

import "strings"

// backendKinds maps the prefixes of the router's backend names to the
// value of the "backend" label, as OpenShift's router labels them.
var backendKinds = map[string]string{
	"be_http":      "http",
	"be_edge_http": "https-edge",
	"be_secure":    "https",
	"be_tcp":       "tcp",
}

// BackendLabels derives the labels of a backend from its name. Route
// backends are named <prefix>:<namespace>:<route> (be_http, be_edge_http,
// be_secure, be_tcp); any other backend (openshift_default, be_sni, a
// custom template's) is labelled backend="other/<name>" with empty
// namespace and route.
func BackendLabels(proxy string) (kind, namespace, route string) {
	prefix, rest, ok := strings.Cut(proxy, ":")
	if ok {
		if k, known := backendKinds[prefix]; known {
			if ns, name, ok := strings.Cut(rest, ":"); ok && ns != "" && name != "" {
				return k, ns, name
			}
		}
	}
	return "other/" + proxy, "", ""
}

// ServerLabels derives the labels of a server from its name. The router
// names servers after their endpoint:
//
//	pod:<pod>:<service>:<port name>:<ip>:<port>   endpoints of a pod
//	ept:<service>:<port name>:<ip>:<port>         other endpoints
//
// and the "server" label is then "<ip>:<port>". Other names (e.g. fe_sni)
// are the server label themselves, with empty pod and service.
func ServerLabels(name string) (server, pod, service string) {
	prefix, rest, ok := strings.Cut(name, ":")
	if ok {
		switch prefix {
		case "pod":
			p, r1, ok1 := strings.Cut(rest, ":")
			svc, r2, ok2 := strings.Cut(r1, ":")
			_, addr, ok3 := strings.Cut(r2, ":") // drop the port name
			if ok1 && ok2 && ok3 && addr != "" {
				return addr, p, svc
			}
		case "ept":
			svc, r1, ok1 := strings.Cut(rest, ":")
			_, addr, ok2 := strings.Cut(r1, ":") // drop the port name
			if ok1 && ok2 && addr != "" {
				return addr, "", svc
			}
		}
	}
	return name, "", ""
}
