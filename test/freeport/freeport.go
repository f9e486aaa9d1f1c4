// Package freeport finds free TCP ports on the loopback interface for tests
// and benchmarks that start servers (haproxy, kube-apiserver, etcd) which
// must be told their ports in advance.
package freeport

import "net"

// Ports returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago: all n are held open together, so they differ from each other.
func Ports(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
