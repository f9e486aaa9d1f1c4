// Package capability asks the local HAProxy (and the OpenSSL it is built
// with) what it supports, where a setting OpenShift deployments send may
// name something this build lacks: ROUTER_CURVES from a current ingress
// operator names X25519MLKEM768, which OpenSSL 3.0 does not know, and one
// unknown name makes HAProxy refuse the whole list.
package capability

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// checkTimeout bounds one haproxy -c run.
const checkTimeout = 10 * time.Second

// SupportedCurves returns the names of curves (TLS groups, in order) that
// haproxy accepts in ssl-default-bind-curves, and those it refuses. An
// error means haproxy could not be asked at all (then nothing is dropped).
func SupportedCurves(ctx context.Context, haproxy string, curves []string) (supported, refused []string, err error) {
	if len(curves) == 0 {
		return nil, nil, nil
	}
	dir, err := os.MkdirTemp("", "haproxy-curves")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	pemPath := filepath.Join(dir, "probe.pem")
	if err := writeProbeCert(pemPath); err != nil {
		return nil, nil, err
	}
	for _, c := range curves {
		ok, err := curveAccepted(ctx, haproxy, dir, pemPath, c)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			supported = append(supported, c)
		} else {
			refused = append(refused, c)
		}
	}
	return supported, refused, nil
}

// curveAccepted checks a configuration whose only TLS listener offers the
// one curve (a bind port is needed for the SSL context to be built; -c
// binds nothing).
func curveAccepted(ctx context.Context, haproxy, dir, pemPath, curve string) (bool, error) {
	cfg := fmt.Sprintf(`global
  ssl-default-bind-curves %s
defaults
  mode http
  timeout client 1s
  timeout server 1s
  timeout connect 1s
frontend probe
  bind 127.0.0.1:65000 ssl crt %s
`, curve, pemPath)
	path := filepath.Join(dir, "probe.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, haproxy, "-c", "-f", path)
	// No terminal: nothing may wait for input.
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return true, nil
	}
	if _, isExit := err.(*exec.ExitError); isExit && ctx.Err() == nil {
		if strings.Contains(out.String(), "curves") {
			return false, nil
		}
		return false, fmt.Errorf("haproxy -c on the curve probe: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return false, fmt.Errorf("running %s -c: %w", haproxy, err)
}

func writeProbeCert(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "curve probe"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&b, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	return os.WriteFile(path, b.Bytes(), 0o600)
}
